package emulator

// The catalog is shared by both organizations and never changes: machine
// (performance) types, software, base images and seat plans. Its ids are small
// numbers of their own, apart from the resource id counter (which starts above
// 1000).

// machineType is a performance type.
type machineType struct {
	id       int64
	name     string
	friendly string
}

// software is an item of the software catalog.
type software struct {
	id   int64
	name string
	size float64 // bytes (one item is fractional, as in the reference's example)
}

// baseImage is a base image of the catalog.
type baseImage struct {
	id   int64
	name string
	size int64 // bytes
}

// plan is a seat plan (POST /seats seat_plan_id).
type plan struct {
	id        int64
	name      string
	diskGB    int64
	storageGB int64
}

type catalog struct {
	machineTypes []*machineType
	software     []*software
	baseImages   []*baseImage // oldest first: the last is the latest
	plans        []*plan
}

func newCatalog() *catalog {
	return &catalog{
		machineTypes: []*machineType{
			{id: 1, name: "standard-4", friendly: "Lake"},
			{id: 2, name: "standard-8", friendly: "Ocean"},
			{id: 3, name: "gpu-8", friendly: "Volcano"},
			{id: 4, name: "highmem-16", friendly: "Glacier"},
		},
		software: []*software{
			{id: 101, name: "Google Chrome", size: 350_000_000},
			{id: 102, name: "Visual Studio Code", size: 420_000_000},
			{id: 103, name: "Blender", size: 1_250_000_000},
			{id: 104, name: "LibreOffice", size: 780_000_000},
			{id: 105, name: "Python 3.12", size: 130_000_000.5},
			{id: 106, name: "Git", size: 310_000_000},
			{id: 107, name: "OBS Studio", size: 520_000_000},
			{id: 108, name: "Unreal Engine 5", size: 62_000_000_000},
		},
		baseImages: []*baseImage{
			{id: 201, name: "Windows Server 2019", size: 22_000_000_000},
			{id: 202, name: "Ubuntu 22.04", size: 9_000_000_000},
			{id: 203, name: "Windows Server 2022", size: 24_000_000_000},
		},
		plans: []*plan{
			{id: 1, name: "Standard", diskGB: 75, storageGB: 25},
			{id: 2, name: "Pro", diskGB: 150, storageGB: 50},
			{id: 3, name: "Studio", diskGB: 300, storageGB: 100},
		},
	}
}

func (c *catalog) machineType(id int64) *machineType {
	for _, m := range c.machineTypes {
		if m.id == id {
			return m
		}
	}
	return nil
}

func (c *catalog) softwareByID(id int64) *software {
	for _, s := range c.software {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (c *catalog) baseImage(id int64) *baseImage {
	for _, b := range c.baseImages {
		if b.id == id {
			return b
		}
	}
	return nil
}

func (c *catalog) latestBaseImage() *baseImage { return c.baseImages[len(c.baseImages)-1] }

func (c *catalog) plan(id int64) *plan {
	for _, p := range c.plans {
		if p.id == id {
			return p
		}
	}
	return nil
}
