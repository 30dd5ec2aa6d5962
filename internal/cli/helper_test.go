package cli

import (
	"slices"
	"testing"
)

func TestHelperArgs(t *testing.T) {
	got, err := helperArgs([]string{"orgfs", "/mnt/org", "-o", "rw,credentials=/etc/o.json,cache_dir=/var/c,cache_max_size=2G,ro,allow_other,uid=1000,gid=100,umask=027,write_back=5s,_netdev,x-systemd.automount,noauto,nofail,noatime,nosuid,nodev"})
	want := []string{"--credentials", "/etc/o.json", "--cache-dir", "/var/c", "--cache-max-size", "2G", "--read-only", "--allow-other",
		"--uid", "1000", "--gid", "100", "--umask", "027", "--write-back", "5s", "--daemon", "/mnt/org"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("helperArgs = %q, %v\nwant %q", got, err, want)
	}
	if got, _ := helperArgs([]string{"src", "/m", "-f", "-oro"}); !slices.Equal(got, []string{"--read-only", "/m"}) {
		t.Errorf("-f -oro: %q", got)
	}
	if got, _ := helperArgs([]string{"src", "/m", "-f", "-onolinks"}); !slices.Equal(got, []string{"--links=false", "/m"}) {
		t.Errorf("-f -onolinks: %q", got)
	}
	if got, _ := helperArgs([]string{"src", "/m", "-f", "-o", "nopassthrough"}); !slices.Equal(got, []string{"--passthrough=false", "/m"}) {
		t.Errorf("-o nopassthrough: %q", got)
	}
	if got, _ := helperArgs([]string{"src", "/m", "-f", "-o", "cold_direct_io"}); !slices.Equal(got, []string{"--cold-direct-io", "/m"}) {
		t.Errorf("-o cold_direct_io: %q", got)
	}
	for _, bad := range [][]string{
		{"src", "/m", "-o", "colour=red"},
		{"src", "/m", "-o", "credentials"},
		{"src"},
		{"src", "/m", "-x"},
	} {
		if _, err := helperArgs(bad); err == nil {
			t.Errorf("helperArgs(%q) accepted", bad)
		}
	}
	if !isMountHelper("/sbin/mount.fuse.orgfs", nil) || !isMountHelper("orgfs", []string{"orgfs", "/m", "-o", "ro"}) || isMountHelper("orgfs", []string{"mount", "/m"}) {
		t.Error("isMountHelper")
	}
}
