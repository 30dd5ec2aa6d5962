package api

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"
)

// Records of the service. Resources the service shapes as
// {"id", "type", "attributes": {...}} are flattened here: ID (always an
// int64, whether the service gives a string or a number), Type, then the
// attributes. Each record decodes both the service's shape and its own
// flattened JSON (what json.Marshal of the record gives), tolerates unknown
// fields, and reads absent or null optional fields as zero values, or nil for
// the pointer fields that the interface documents as nullable.

// Values of File.ObjectType.
const (
	ObjectFile      = "file"
	ObjectDirectory = "directory"
	ObjectRoot      = "root"
)

// FileStatusUploadCompleted is the status of a fully uploaded file.
const FileStatusUploadCompleted = "upload_completed"

// Values of Image.Status.
const (
	ImagePending   = "pending"
	ImageBuilding  = "building"
	ImageAvailable = "available"
	ImageFailed    = "failed"
)

// Values of Image.Source.
const (
	ImageSourcePreInstallation = "pre_installation"
	ImageSourceSeat            = "seat"
)

// Values of DownloadJob.Status.
const (
	DownloadPending    = "pending"
	DownloadProcessing = "processing"
	DownloadUploaded   = "uploaded"
	DownloadFailed     = "failed"
	DownloadCancelled  = "cancelled"
)

// Values of Seat.FriendlyStatus (service-notes.md).
const (
	SeatOff              = "off"
	SeatCreating         = "creating"
	SeatTurningOn        = "turning_on"
	SeatReady            = "ready"
	SeatTurningOff       = "turning_off"
	SeatResizingDisk     = "resizing_disk"
	SeatInstalling       = "installing"
	SeatRegionMigration  = "region_migration"
	SeatWarmingUp        = "warming_up"
	SeatGracefulStopping = "graceful_stopping"
)

// Values of MachineUsage.UsageSource.
const (
	UsageSourceMachine     = "machine"
	UsageSourceTeamBalance = "team_balance"
)

// resource is the service's {"id", "type", "attributes"} shape.
type resource struct {
	ID         flexInt         `json:"id"`
	Type       flexString      `json:"type"`
	Attributes json.RawMessage `json:"attributes"`
}

// decodeResource decodes b as a resource, filling attrs from its attributes,
// or from b itself when there is no attributes object (the flattened form).
// It reports false for a JSON null (nothing to decode).
func decodeResource(b []byte, attrs any) (resource, bool, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return resource{}, false, nil
	}
	var r resource
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, err
	}
	src := bytes.TrimSpace(r.Attributes)
	if len(src) == 0 || src[0] != '{' {
		src = b
	}
	if err := json.Unmarshal(src, attrs); err != nil {
		return r, false, err
	}
	return r, true, nil
}

// AccountUsage is the answer of GET /usage.
type AccountUsage struct {
	UsageMinutes int64  `json:"usage_minutes"` // available usage in minutes
	MachineType  string `json:"machine_type"`  // friendly name used for the usage calculation
}

// UnmarshalJSON decodes the record leniently.
func (u *AccountUsage) UnmarshalJSON(b []byte) error {
	var w struct {
		UsageMinutes flexInt    `json:"usage_minutes"`
		MachineType  flexString `json:"machine_type"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*u = AccountUsage{UsageMinutes: int64(w.UsageMinutes), MachineType: string(w.MachineType)}
	return nil
}

// MachineUsage is one computer's usage (GET /usage/machines, GET /usage/machines/{id}).
type MachineUsage struct {
	MachineID    int64  `json:"machine_id"`
	MachineName  string `json:"machine_name"`
	UsageMinutes int64  `json:"usage_minutes"` // remaining minutes, credits included
	MachineType  string `json:"machine_type"`
	UsageSource  string `json:"usage_source"` // UsageSourceMachine or UsageSourceTeamBalance
}

// UnmarshalJSON decodes the record leniently.
func (u *MachineUsage) UnmarshalJSON(b []byte) error {
	var w struct {
		MachineID    flexInt    `json:"machine_id"`
		MachineName  flexString `json:"machine_name"`
		UsageMinutes flexInt    `json:"usage_minutes"`
		MachineType  flexString `json:"machine_type"`
		UsageSource  flexString `json:"usage_source"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*u = MachineUsage{
		MachineID: int64(w.MachineID), MachineName: string(w.MachineName), UsageMinutes: int64(w.UsageMinutes),
		MachineType: string(w.MachineType), UsageSource: string(w.UsageSource),
	}
	return nil
}

// MachinesUsage is the answer of GET /usage/machines.
type MachinesUsage struct {
	Machines []MachineUsage `json:"machines"`
	Count    int64          `json:"count"` // total number of computers
}

// UnmarshalJSON decodes the record leniently.
func (u *MachinesUsage) UnmarshalJSON(b []byte) error {
	var w struct {
		Machines []MachineUsage `json:"machines"`
		Count    lenientInt     `json:"count"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*u = MachinesUsage{Machines: w.Machines, Count: int64(w.Count)}
	return nil
}

// AssignResult is the answer of POST /usage/assign.
type AssignResult struct {
	AssignedMinutes int64  `json:"assigned_minutes"`
	MachineID       int64  `json:"machine_id"`
	MachineType     string `json:"machine_type"` // friendly name used for pricing
}

// UnmarshalJSON decodes the record leniently.
func (r *AssignResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Minutes     flexInt    `json:"assigned_minutes"`
		MachineID   flexInt    `json:"machine_id"`
		MachineType flexString `json:"machine_type"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = AssignResult{AssignedMinutes: int64(w.Minutes), MachineID: int64(w.MachineID), MachineType: string(w.MachineType)}
	return nil
}

// RetrieveResult is the answer of POST /usage/retrieve.
type RetrieveResult struct {
	RetrievedMinutes int64  `json:"retrieved_minutes"`
	MachineID        int64  `json:"machine_id"`
	MachineType      string `json:"machine_type"`
}

// UnmarshalJSON decodes the record leniently.
func (r *RetrieveResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Minutes     flexInt    `json:"retrieved_minutes"`
		MachineID   flexInt    `json:"machine_id"`
		MachineType flexString `json:"machine_type"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = RetrieveResult{RetrievedMinutes: int64(w.Minutes), MachineID: int64(w.MachineID), MachineType: string(w.MachineType)}
	return nil
}

// Image is an organization image (template).
type Image struct {
	ID        int64           `json:"id"`
	Type      string          `json:"type,omitempty"` // "image"
	Name      string          `json:"name"`
	Size      Size            `json:"size"`   // GB (5% buffer for installed images); a byte count the service gives is converted
	Status    string          `json:"status"` // ImagePending, ImageBuilding, ImageAvailable, ImageFailed
	Source    string          `json:"source"` // ImageSourcePreInstallation or ImageSourceSeat
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Softwares []ImageSoftware `json:"softwares"`
}

// UnmarshalJSON decodes the service's image object (or the flattened form).
// The softwares list may be a plain array or an object {"data": [...]}.
func (im *Image) UnmarshalJSON(b []byte) error {
	var a struct {
		ID        *flexInt     `json:"id"`
		Name      flexString   `json:"name"`
		Size      Size         `json:"size"`
		Status    flexString   `json:"status"`
		Source    flexString   `json:"source"`
		CreatedAt flexTime     `json:"created_at"`
		UpdatedAt flexTime     `json:"updated_at"`
		Softwares softwareList `json:"softwares"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	id := int64(r.ID)
	if a.ID != nil && *a.ID != 0 {
		id = int64(*a.ID) // attributes.id is the numeric id
	}
	*im = Image{
		ID: id, Type: string(r.Type), Name: string(a.Name), Size: imageGBOf(a.Size), Status: string(a.Status),
		Source: string(a.Source), CreatedAt: time.Time(a.CreatedAt), UpdatedAt: time.Time(a.UpdatedAt),
		Softwares: []ImageSoftware(a.Softwares),
	}
	return nil
}

// ImageSoftware is a software pre-installed in an image.
type ImageSoftware struct {
	ID   int64  `json:"id"`
	Type string `json:"type,omitempty"` // "software"
	Name string `json:"name"`
	Size Size   `json:"size"` // bytes; a size in GB the service gives is converted
}

// UnmarshalJSON decodes the service's software object (or the flattened form).
func (s *ImageSoftware) UnmarshalJSON(b []byte) error {
	var a struct {
		ID   *flexInt   `json:"id"`
		Name flexString `json:"name"`
		Size Size       `json:"size"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	id := int64(r.ID)
	if a.ID != nil && *a.ID != 0 {
		id = int64(*a.ID)
	}
	*s = ImageSoftware{ID: id, Type: string(r.Type), Name: string(a.Name), Size: softwareBytesOf(a.Size)}
	return nil
}

// softwareList is an image's software list: a plain array, or an object
// wrapping it as {"data": [...]}; null or anything else reads as empty.
type softwareList []ImageSoftware

func (l *softwareList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '[':
		var items []ImageSoftware
		if err := json.Unmarshal(b, &items); err != nil {
			return err
		}
		*l = items
	case '{':
		var w struct {
			Data softwareList `json:"data"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*l = w.Data
	default:
		*l = nil
	}
	return nil
}

// SoftwareCatalog is the answer of GET /software.
type SoftwareCatalog struct {
	Software   []Software  `json:"software"`
	BaseImages []BaseImage `json:"base_images"`
}

// Software is an item of the software catalog; its ID goes in software_ids.
type Software struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Size Size   `json:"size"` // bytes, maybe fractional; a size in GB the service gives (0.35) is converted
}

// UnmarshalJSON decodes the record leniently.
func (s *Software) UnmarshalJSON(b []byte) error {
	var a struct {
		ID   flexInt    `json:"id"`
		Name flexString `json:"name"`
		Size Size       `json:"size"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	if a.ID == 0 {
		a.ID = r.ID
	}
	*s = Software{ID: int64(a.ID), Name: string(a.Name), Size: softwareBytesOf(a.Size)}
	return nil
}

// BaseImage is a base image of the software catalog; its ID is a base_image_id.
type BaseImage struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Size Size   `json:"size"`           // bytes
	Type string `json:"type,omitempty"` // "base_image"
}

// UnmarshalJSON decodes the record leniently.
func (bi *BaseImage) UnmarshalJSON(b []byte) error {
	var a struct {
		ID   flexInt    `json:"id"`
		Name flexString `json:"name"`
		Size Size       `json:"size"`
		Type flexString `json:"type"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	if a.ID == 0 {
		a.ID = r.ID
	}
	*bi = BaseImage{ID: int64(a.ID), Name: string(a.Name), Size: a.Size, Type: string(a.Type)}
	return nil
}

// Permissions are a computer's permissions. In a CreateSeatsRequest a nil
// field is not sent (the service default applies: internet, downloads and
// clipboard on; analytics and recordings off); in a Seat, nil means absent.
type Permissions struct {
	PublicInternetAccess              *bool `json:"public_internet_access,omitempty"`
	CanDownloadFromServiceWorkstation *bool `json:"can_download_from_service_workstation,omitempty"`
	AnalyticsCollectionEnabled        *bool `json:"analytics_collection_enabled,omitempty"`
	ClipboardEnabled                  *bool `json:"clipboard_enabled,omitempty"`
	ScreenRecordingEnabled            *bool `json:"screen_recording_enabled,omitempty"`
	InputRecordingEnabled             *bool `json:"input_recording_enabled,omitempty"`
}

// UnmarshalJSON decodes the record leniently.
func (p *Permissions) UnmarshalJSON(b []byte) error {
	var w struct {
		PublicInternetAccess              *flexBool `json:"public_internet_access"`
		CanDownloadFromServiceWorkstation *flexBool `json:"can_download_from_service_workstation"`
		AnalyticsCollectionEnabled        *flexBool `json:"analytics_collection_enabled"`
		ClipboardEnabled                  *flexBool `json:"clipboard_enabled"`
		ScreenRecordingEnabled            *flexBool `json:"screen_recording_enabled"`
		InputRecordingEnabled             *flexBool `json:"input_recording_enabled"`
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Permissions{
		PublicInternetAccess:              w.PublicInternetAccess.ptr(),
		CanDownloadFromServiceWorkstation: w.CanDownloadFromServiceWorkstation.ptr(),
		AnalyticsCollectionEnabled:        w.AnalyticsCollectionEnabled.ptr(),
		ClipboardEnabled:                  w.ClipboardEnabled.ptr(),
		ScreenRecordingEnabled:            w.ScreenRecordingEnabled.ptr(),
		InputRecordingEnabled:             w.InputRecordingEnabled.ptr(),
	}
	return nil
}

// Bool returns a pointer to b, for the optional fields of requests.
func Bool(b bool) *bool { return &b }

// Int64 returns a pointer to n, for the optional fields of requests.
func Int64(n int64) *int64 { return &n }

// User is the owner of a file or computer.
type User struct {
	ID    string `json:"id"` // UUID
	Email string `json:"email"`
	Name  string `json:"name"`
}

// users are the users decoded, by their JSON text: a listing repeats the
// same few users' objects file after file, and each is decoded once.
// Bounded by maxUsers; past it, a user is decoded each time.
var users struct {
	sync.Mutex
	m map[string]User
}

const maxUsers = 1024

// UnmarshalJSON decodes the service's user object (or the flattened form).
func (u *User) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil
	}
	users.Lock()
	known, ok := users.m[string(b)]
	users.Unlock()
	if ok {
		*u = known
		return nil
	}
	if err := u.decode(b); err != nil {
		return err
	}
	users.Lock()
	if users.m == nil {
		users.m = map[string]User{}
	}
	if len(users.m) < maxUsers {
		users.m[string(b)] = *u
	}
	users.Unlock()
	return nil
}

func (u *User) decode(b []byte) error {
	var w struct {
		ID         flexString `json:"id"`
		Email      flexString `json:"email"`
		Name       flexString `json:"name"`
		Attributes *struct {
			Email flexString `json:"email"`
			Name  flexString `json:"name"`
		} `json:"attributes"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Attributes != nil {
		w.Email, w.Name = w.Attributes.Email, w.Attributes.Name
	}
	*u = User{ID: w.ID.intern(), Email: w.Email.intern(), Name: w.Name.intern()} // one user owns many files
	return nil
}

// Seat is a computer (the words seat, machine and computer name the same
// thing). Its ID is the one every /machines/{id} and /seats/{id} path takes.
// Raw keeps the record as the service sent it, for fields not modelled here.
type Seat struct {
	ID                int64           `json:"id"`
	Type              string          `json:"type,omitempty"` // "seat"
	Name              string          `json:"name"`
	Status            string          `json:"status"`
	FriendlyStatus    string          `json:"friendly_status"` // SeatOff, SeatReady, ...
	AutoStopThreshold int64           `json:"auto_stop_threshold"`
	FileStorageSize   Size            `json:"file_storage_size"` // GB, as the examples read (documented as bytes: a byte count is converted, GB of 2^30 bytes)
	DiskSize          Size            `json:"disk_size"`         // GB, as file_storage_size
	NetworkCredit     int64           `json:"network_credit"`
	RemainingUsage    int64           `json:"remaining_usage"`
	DepositedUsage    int64           `json:"deposited_usage"`
	AssignedImageID   *int64          `json:"assigned_image_id"`
	AssignedImageName *string         `json:"assigned_image_name"`
	UsageSource       string          `json:"usage_source"`
	Permissions       Permissions     `json:"permissions"`
	User              *User           `json:"user"`
	Machine           *Machine        `json:"machine"`
	Task              json.RawMessage `json:"task,omitempty"` // null or an object
	Raw               json.RawMessage `json:"-"`
}

// Running reports whether the computer is up (friendly status "ready").
func (s *Seat) Running() bool { return s.FriendlyStatus == SeatReady }

// Stopped reports whether the computer is stopped (friendly status "off").
func (s *Seat) Stopped() bool { return s.FriendlyStatus == SeatOff }

// UnmarshalJSON decodes the service's seat object (or the flattened form).
func (s *Seat) UnmarshalJSON(b []byte) error {
	var a struct {
		Name              flexString      `json:"name"`
		Status            flexString      `json:"status"`
		FriendlyStatus    flexString      `json:"friendly_status"`
		AutoStopThreshold lenientInt      `json:"auto_stop_threshold"`
		FileStorageSize   Size            `json:"file_storage_size"`
		DiskSize          Size            `json:"disk_size"`
		NetworkCredit     lenientInt      `json:"network_credit"`
		RemainingUsage    flexInt         `json:"remaining_usage"`
		DepositedUsage    flexInt         `json:"deposited_usage"`
		AssignedImageID   *flexInt        `json:"assigned_image_id"`
		AssignedImageName *flexString     `json:"assigned_image_name"`
		UsageSource       flexString      `json:"usage_source"`
		Permissions       Permissions     `json:"permissions"`
		User              *User           `json:"user"`
		Machine           *Machine        `json:"machine"`
		Task              json.RawMessage `json:"task"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	*s = Seat{
		ID: int64(r.ID), Type: string(r.Type), Name: string(a.Name), Status: string(a.Status),
		FriendlyStatus: string(a.FriendlyStatus), AutoStopThreshold: int64(a.AutoStopThreshold),
		FileStorageSize: gbOf(a.FileStorageSize), DiskSize: gbOf(a.DiskSize), NetworkCredit: int64(a.NetworkCredit),
		RemainingUsage: int64(a.RemainingUsage), DepositedUsage: int64(a.DepositedUsage),
		AssignedImageID: a.AssignedImageID.ptr(), AssignedImageName: a.AssignedImageName.ptr(),
		UsageSource: string(a.UsageSource), Permissions: a.Permissions, User: a.User, Machine: a.Machine,
		Task: rawOrNil(a.Task), Raw: append(json.RawMessage(nil), bytes.TrimSpace(b)...),
	}
	return nil
}

// Machine is the machine record nested in a Seat.
type Machine struct {
	ID                 int64     `json:"id"`
	Type               string    `json:"type,omitempty"` // "machine"
	Status             string    `json:"status"`
	Name               string    `json:"name"`
	Region             string    `json:"region"`
	LastSessionStartAt time.Time `json:"last_session_start_at"`
	MachineType        string    `json:"machine_type"`
}

// UnmarshalJSON decodes the service's machine object (or the flattened form).
func (m *Machine) UnmarshalJSON(b []byte) error {
	var a struct {
		Status             flexString `json:"status"`
		Name               flexString `json:"name"`
		Region             flexString `json:"region"`
		LastSessionStartAt flexTime   `json:"last_session_start_at"`
		MachineType        flexString `json:"machine_type"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	*m = Machine{
		ID: int64(r.ID), Type: string(r.Type), Status: string(a.Status), Name: string(a.Name),
		Region: string(a.Region), LastSessionStartAt: time.Time(a.LastSessionStartAt), MachineType: string(a.MachineType),
	}
	return nil
}

// MachineType is a performance type available to a computer.
type MachineType struct {
	ID           int64           `json:"id"`
	Type         string          `json:"type,omitempty"` // "machine_type"
	Name         string          `json:"name"`
	FriendlyName string          `json:"friendly_name"`
	Raw          json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the service's machine type object (or the flattened form).
func (m *MachineType) UnmarshalJSON(b []byte) error {
	var a struct {
		Name         flexString `json:"name"`
		FriendlyName flexString `json:"friendly_name"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	*m = MachineType{
		ID: int64(r.ID), Type: string(r.Type), Name: string(a.Name), FriendlyName: string(a.FriendlyName),
		Raw: append(json.RawMessage(nil), bytes.TrimSpace(b)...),
	}
	return nil
}

// AccessLink is the answer of POST /machines/{id}/access. ConnectionLink
// grants access to the computer: treat it as a secret.
type AccessLink struct {
	ID             string    `json:"id"`
	Type           string    `json:"type,omitempty"` // "machine_access"
	UID            string    `json:"uid"`
	ConnectionLink string    `json:"connection_link"`
	ExpiresAt      time.Time `json:"expires_at"`

	answered time.Time // the answer's timestamp (AccessLink's judge of the unit)
}

// UnmarshalJSON decodes the service's access object (or the flattened form).
func (l *AccessLink) UnmarshalJSON(b []byte) error {
	var w struct {
		ID         flexString      `json:"id"`
		Type       flexString      `json:"type"`
		Attributes json.RawMessage `json:"attributes"`
	}
	var a struct {
		UID            flexString `json:"uid"`
		ConnectionLink flexString `json:"connection_link"`
		ExpiresAt      flexTime   `json:"expires_at"`
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	src := bytes.TrimSpace(w.Attributes)
	if len(src) == 0 || src[0] != '{' {
		src = b
	}
	if err := json.Unmarshal(src, &a); err != nil {
		return err
	}
	*l = AccessLink{ID: string(w.ID), Type: string(w.Type), UID: string(a.UID), ConnectionLink: string(a.ConnectionLink), ExpiresAt: time.Time(a.ExpiresAt)}
	return nil
}
