package logging

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFlagsAndValidate(t *testing.T) {
	o := Defaults()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	file := filepath.Join(t.TempDir(), "log")
	if err := fs.Parse([]string{"--log-level", "debug", "--log-format", "json", "--log-file", file}); err != nil {
		t.Fatal(err)
	}
	log, closer, err := o.New()
	if err != nil {
		t.Fatal(err)
	}
	log.WithField("k", "v").Debug("hello")
	closer.Close()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil || rec["msg"] != "hello" || rec["k"] != "v" {
		t.Fatalf("log file holds %q (%v)", b, err)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Fatalf("log file mode %v", st.Mode())
	}
	for _, bad := range []Options{{Level: "loud", Format: "text"}, {Level: "info", Format: "xml"}} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--log-") {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}
