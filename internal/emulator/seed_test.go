package emulator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
)

func TestDemoSeedStates(t *testing.T) {
	v := start(t, emulator.SeedDemo)
	fx := v.e.Fixtures(emulator.OrgA)
	// Seeded transitional states hold whatever the clock does.
	v.clock.Advance(time.Hour)

	seats := v.ok(v.a, "GET", "/seats", nil)
	statuses := map[string]int{}
	byName := map[string]int{}
	for _, s := range list(seats, "seats") {
		statuses[attrs(s)["friendly_status"].(string)]++
		byName[attrs(s)["name"].(string)]++
	}
	if num(t, seats, "count") != 4 || byName["Build Box"] != 2 || byName["Café Render"] != 1 || byName["Design Studio #1"] != 1 {
		t.Fatalf("computers: %v", byName)
	}
	if statuses["ready"] != 1 || statuses["installing"] != 1 || statuses["off"] != 2 {
		t.Fatalf("computer states: %v", statuses)
	}
	images := v.ok(v.a, "GET", "/images", nil)
	imgStatus := map[string]int{}
	for _, im := range list(images, "images") {
		imgStatus[attrs(im)["status"].(string)]++
	}
	for _, s := range []string{"pending", "building", "available", "failed"} {
		if imgStatus[s] == 0 {
			t.Fatalf("no image %s: %v", s, imgStatus)
		}
	}

	img := func(id int64) string { return fmt.Sprintf("/images/%d/assign", id) }
	v.call(v.a, 4208, "POST", "/images", map[string]any{"machine_id": fx.NoImageMachine})
	v.call(v.a, 4209, "POST", "/images", map[string]any{"machine_id": fx.RunningMachine})
	v.call(v.a, 4212, "POST", "/images", map[string]any{"machine_id": fx.InstallingMachine})
	v.call(v.a, 4213, "DELETE", fmt.Sprintf("/images/%d", fx.BuildingImage), nil)
	v.call(v.a, 4210, "POST", img(fx.PendingImage), map[string]any{"machine_ids": []int64{fx.StoppedMachine}})
	v.call(v.a, 4210, "POST", img(fx.BuildingImage), map[string]any{"machine_ids": []int64{fx.StoppedMachine}})
	v.call(v.a, 4210, "POST", img(fx.FailedImage), map[string]any{"machine_ids": []int64{fx.StoppedMachine}})
	v.call(v.a, 4214, "POST", img(fx.AvailableImage), map[string]any{"machine_ids": []int64{fx.InstallingMachine}})
	v.call(v.a, 4510, "POST", img(fx.LargeImage), map[string]any{"machine_ids": []int64{fx.StoppedMachine}})
	v.call(v.a, 4211, "POST", img(fx.AvailableImage), map[string]any{"machine_ids": []int64{fx.SeatlessMachine}})
	v.call(v.a, 4709, "GET", fmt.Sprintf("/usage/machines/%d", fx.SeatlessMachine), nil)
	v.call(v.a, 4719, "POST", "/files/download", map[string]any{"directory_id": fx.EmptyDir})
	v.ok(v.a, "POST", "/images", map[string]any{"machine_id": fx.StoppedMachine, "name": "from the café"})
	v.ok(v.a, "POST", fmt.Sprintf("/machines/%d/list-content", fx.RunningMachine), map[string]any{"path": `C:\Users`})
	v.ok(v.a, "DELETE", fmt.Sprintf("/images/%d", fx.PendingImage), nil)
	if st := v.seatStatus(v.a, fx.InstallingMachine); st != "off" {
		t.Fatalf("computer after its pending image was deleted: %s", st)
	}

	// Shared storage content.
	root := v.ok(v.a, "GET", "/files?per_page=100", nil)
	if num(t, root, "count") < 5 {
		t.Fatalf("shared root: %v", names(root, "files"))
	}
	small := v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d&per_page=1000", fx.SmallFilesDir), nil)
	if num(t, small, "count") != 300 {
		t.Fatalf("small-files: %d", num(t, small, "count"))
	}
	var withSpace, withHash, unicode bool
	for _, n := range names(small, "files") {
		for _, r := range n {
			switch {
			case r == ' ':
				withSpace = true
			case r == '#':
				withHash = true
			case r > 127:
				unicode = true
			}
		}
	}
	if !withSpace || !withHash || !unicode {
		t.Fatalf("small-files names lack spaces/#/unicode")
	}
	big := v.ok(v.a, "GET", fmt.Sprintf("/files/%d/download", fx.BigFile), nil)
	if num(t, big, "size") != 64<<20 {
		t.Fatalf("big file: %v", big)
	}
	if n := num(t, v.ok(v.a, "GET", "/files?q=.&per_page=1", nil), "count"); n < 300 || n > 600 {
		t.Fatalf("shared files in all: %d", n)
	}
	for _, id := range []int64{fx.RunningMachine, fx.StoppedMachine, fx.NoImageMachine, fx.InstallingMachine} {
		if n := num(t, v.ok(v.a, "GET", fmt.Sprintf("/machines/%d/files", id), nil), "count"); n == 0 {
			t.Fatalf("computer %d has no files", id)
		}
	}

	// org-b: smaller, no feature.
	fb := v.e.Fixtures(emulator.OrgB)
	if n := num(t, v.ok(v.b, "GET", "/seats", nil), "count"); n != 2 {
		t.Fatalf("org-b computers: %d", n)
	}
	v.call(v.b, 4710, "POST", "/files/download", map[string]any{"directory_id": fb.EmptyDir})
}

func TestEmptySeed(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	if n := num(t, v.ok(v.a, "GET", "/files", nil), "count"); n != 0 {
		t.Fatalf("shared files: %d", n)
	}
	if n := num(t, v.ok(v.b, "GET", "/files/recordings", nil), "count"); n != 0 {
		t.Fatalf("recordings: %d", n)
	}
	s := list(v.ok(v.a, "GET", "/seats", nil), "seats")
	if len(s) != 1 || attrs(s[0])["friendly_status"] != "off" {
		t.Fatalf("seats: %v", s)
	}
	if n := num(t, v.ok(v.a, "GET", "/images", nil), "count"); n != 0 {
		t.Fatalf("images: %d", n)
	}
}
