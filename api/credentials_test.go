package api

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/logging"
)

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var logBuf bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logBuf)

	good := write("org-a.json", `{"endpoint":"http://127.0.0.1:8080","key":"demo-key-a","secret":"demo-secret-a"}`, 0o600)
	c, err := LoadCredentialsWithLogger(good, log)
	if err != nil || c != (Credentials{Endpoint: "http://127.0.0.1:8080", Key: "demo-key-a", Secret: "demo-secret-a"}) {
		t.Fatal(c, err)
	}
	if logBuf.Len() != 0 {
		t.Fatalf("warning for a 0600 file: %s", logBuf.String())
	}

	open := write("open.json", `{"endpoint":"http://127.0.0.1:8080","key":"demo-key-a","secret":"demo-secret-a"}`, 0o644)
	if _, err := LoadCredentialsWithLogger(open, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logBuf.String(), "readable by group or others") || strings.Contains(logBuf.String(), "demo-secret-a") {
		t.Fatalf("warning: %q", logBuf.String())
	}

	bad := []struct{ name, content, want string }{
		{"missing.json", `{"endpoint":"http://h","key":"k"}`, "missing secret"},
		{"syntax.json", `{"endpoint":"http://h","key":"k","secret":"SUPERSECRET`, "invalid JSON"},
		{"type.json", `{"endpoint":"http://h","key":"k","secret":"SUPERSECRET","x":` + "\x01" + `}`, "invalid JSON"},
		{"endpoint.json", `{"endpoint":"h:1","key":"k","secret":"SUPERSECRET"}`, "endpoint"},
		{"colon.json", `{"endpoint":"http://h","key":"k:SUPERSECRET","secret":"SUPERSECRET"}`, "must not contain"},
	}
	for _, b := range bad {
		_, err := LoadCredentialsWithLogger(write(b.name, b.content, 0o600), nil)
		if err == nil || !strings.Contains(err.Error(), b.want) || strings.Contains(err.Error(), "SUPERSECRET") {
			t.Errorf("%s: %v", b.name, err)
		}
	}
	if _, err := LoadCredentials(filepath.Join(dir, "absent.json")); err == nil {
		t.Error("absent file accepted")
	}
}

func TestCredentialsFromEnv(t *testing.T) {
	t.Setenv(EnvEndpoint, "https://api.example")
	t.Setenv(EnvKey, "env-key-123456")
	t.Setenv(EnvSecret, "env-secret")
	c, err := CredentialsFromEnv()
	if err != nil || c.Endpoint != "https://api.example" || c.Key != "env-key-123456" || c.Secret != "env-secret" {
		t.Fatal(c, err)
	}
	t.Setenv(EnvSecret, "")
	if _, err := CredentialsFromEnv(); err == nil || !strings.Contains(err.Error(), "missing secret") {
		t.Fatal(err)
	}
}

func TestCredentialsNeverFormatted(t *testing.T) {
	c := Credentials{Endpoint: "http://127.0.0.1:8080", Key: "demo-key-abcdef", Secret: "demo-secret-XYZZY"}
	type holder struct {
		Creds Credentials
		Ptr   *Credentials
	}
	outs := []string{
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c),
		fmt.Sprintf("%q", c), fmt.Sprintf("%x", c), fmt.Sprintf("%X", c), fmt.Sprintf("%d", c), fmt.Sprint(c), fmt.Sprintln(c),
		fmt.Sprintf("%v", &c), fmt.Sprintf("%+v", holder{c, &c}), fmt.Sprintf("%#v", holder{c, &c}),
		fmt.Sprintf("%v", []Credentials{c}), c.String(), c.GoString(),
	}
	for _, out := range outs {
		if strings.Contains(out, "XYZZY") || strings.Contains(out, "demo-secret") || strings.Contains(out, "key-abcdef") {
			t.Errorf("secret or key shown: %s", out)
		}
	}
	if !strings.Contains(fmt.Sprint(c), "127.0.0.1:8080") || !strings.Contains(fmt.Sprint(c), "demo****") {
		t.Errorf("%v", c)
	}
	// The client and its transport do not show them either.
	cl, err := New(c, Options{Logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprintf("%v", cl), fmt.Sprintf("%+v", cl), fmt.Sprintf("%#v", cl), fmt.Sprintf("%+v", *cl.api)} {
		if strings.Contains(out, "XYZZY") || strings.Contains(out, "key-abcdef") {
			t.Errorf("client shows credentials: %s", out)
		}
	}
}
