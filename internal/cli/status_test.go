package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/fs/ctl"
)

// orgfs status says whether the service can be reached: online, or
// offline since when, why, and how many changes wait for it.
func TestServiceLine(t *testing.T) {
	var s ctl.Stats
	s.Service.Online = true
	if got := serviceLine(s); got != "online" {
		t.Errorf("online: %q", got)
	}
	since := time.Date(2026, 11, 29, 14, 2, 11, 0, time.Local)
	s.Service.Online, s.Service.OfflineSince, s.Service.OfflineReason, s.Service.ChangesWaiting = false, &since, "connection refused", 3
	if got := serviceLine(s); !strings.HasPrefix(got, "offline since 14:02:11: connection refused; 3 changes waiting") {
		t.Errorf("offline: %q", got)
	}
	s.Service.ChangesWaiting = 1
	if got := serviceLine(s); !strings.Contains(got, "; 1 change waiting") {
		t.Errorf("offline, one change: %q", got)
	}
}
