package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sirupsen/logrus"
)

// Environment variables read by CredentialsFromEnv.
const (
	EnvEndpoint = "ORGFS_ENDPOINT"
	EnvKey      = "ORGFS_API_KEY"
	EnvSecret   = "ORGFS_API_SECRET"
)

// maxCredentialsFile bounds the size of a credentials file.
const maxCredentialsFile = 64 << 10

// Credentials are an organization's API credentials: the service endpoint
// (scheme, host and port, with or without the /organization-management/v1
// prefix), the API key and its secret. The JSON form is
// {"endpoint", "key", "secret"}.
//
// Formatting Credentials with fmt (any verb, %v, %+v, %#v, %s, %q, %x...)
// never shows the secret and shows only the start of the key; no error or
// log line of this package contains either.
type Credentials struct {
	Endpoint string `json:"endpoint"`
	Key      string `json:"key"`
	Secret   string `json:"secret"`
}

// String describes the credentials without the secret.
func (c Credentials) String() string {
	return fmt.Sprintf("{Endpoint:%s Key:%s Secret:%s}", c.Endpoint, maskKey(c.Key), maskSecret(c.Secret))
}

// GoString describes the credentials without the secret, for %#v.
func (c Credentials) GoString() string {
	return fmt.Sprintf("api.Credentials{Endpoint:%q, Key:%q, Secret:%q}", c.Endpoint, maskKey(c.Key), maskSecret(c.Secret))
}

// Format implements fmt.Formatter so that every verb goes through String or
// GoString: no verb prints the secret.
func (c Credentials) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, c.GoString())
	case verb == 'q':
		fmt.Fprintf(f, "%q", c.String())
	default:
		io.WriteString(f, c.String())
	}
}

func maskKey(k string) string {
	switch {
	case k == "":
		return ""
	case len(k) <= 8:
		return "****"
	default:
		return k[:4] + "****"
	}
}

func maskSecret(s string) string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// Validate checks that all three fields are set and usable. Its errors never
// quote the key or the secret.
func (c Credentials) Validate() error {
	var missing []string
	if strings.TrimSpace(c.Endpoint) == "" {
		missing = append(missing, "endpoint")
	}
	if c.Key == "" {
		missing = append(missing, "key")
	}
	if c.Secret == "" {
		missing = append(missing, "secret")
	}
	if len(missing) > 0 {
		return fmt.Errorf("api: credentials: missing %s", strings.Join(missing, ", "))
	}
	if strings.ContainsAny(c.Key, ": \t\r\n") {
		return errors.New("api: credentials: the key must not contain ':' or white space")
	}
	if _, err := endpointURL(c.Endpoint); err != nil {
		return err
	}
	return nil
}

// LoadCredentials reads a credentials file (JSON {"endpoint", "key",
// "secret"}). A file readable by group or others is accepted with a warning
// logged through logrus's standard logger; LoadCredentialsWithLogger chooses
// the logger.
func LoadCredentials(path string) (Credentials, error) {
	return LoadCredentialsWithLogger(path, logrus.StandardLogger())
}

// LoadCredentialsWithLogger is LoadCredentials warning through log (nil: no warning).
func LoadCredentialsWithLogger(path string, log logrus.FieldLogger) (Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return Credentials{}, fmt.Errorf("api: credentials: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Credentials{}, fmt.Errorf("api: credentials: %w", err)
	}
	if fi.IsDir() {
		return Credentials{}, fmt.Errorf("api: credentials: %s is a directory", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && log != nil {
		log.WithFields(logrus.Fields{"path": path, "mode": fmt.Sprintf("%04o", perm)}).
			Warn("credentials file is readable by group or others; chmod 600 it")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialsFile+1))
	if err != nil {
		return Credentials{}, fmt.Errorf("api: credentials: %s: %w", path, err)
	}
	if len(data) > maxCredentialsFile {
		return Credentials{}, fmt.Errorf("api: credentials: %s: file too large", path)
	}
	var w struct {
		Endpoint flexString `json:"endpoint"`
		Key      flexString `json:"key"`
		Secret   flexString `json:"secret"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		// The decoder's message may quote the file's content: keep only where.
		return Credentials{}, fmt.Errorf("api: credentials: %s: %s", path, jsonErrorText(err))
	}
	c := Credentials{Endpoint: strings.TrimSpace(string(w.Endpoint)), Key: strings.TrimSpace(string(w.Key)), Secret: strings.TrimSpace(string(w.Secret))}
	if err := c.Validate(); err != nil {
		return Credentials{}, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

// CredentialsFromEnv reads the credentials from ORGFS_ENDPOINT,
// ORGFS_API_KEY and ORGFS_API_SECRET.
func CredentialsFromEnv() (Credentials, error) {
	c := Credentials{
		Endpoint: strings.TrimSpace(os.Getenv(EnvEndpoint)),
		Key:      strings.TrimSpace(os.Getenv(EnvKey)),
		Secret:   strings.TrimSpace(os.Getenv(EnvSecret)),
	}
	if err := c.Validate(); err != nil {
		return Credentials{}, fmt.Errorf("%w (from %s, %s, %s)", err, EnvEndpoint, EnvKey, EnvSecret)
	}
	return c, nil
}
