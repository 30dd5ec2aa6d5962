package emulator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// OrgCredentials are an organization's API credentials, in the JSON shape of a
// credentials file ({"endpoint", "key", "secret"}).
type OrgCredentials struct {
	Name     string `json:"-"`
	Endpoint string `json:"endpoint"`
	Key      string `json:"key"`
	Secret   string `json:"secret"`
}

// Server is an emulator serving its API and its object store on two listeners.
type Server struct {
	Emulator   *Emulator
	APIURL     string // http://HOST:PORT, without the /organization-management/v1 prefix
	ObjectsURL string // http://HOST:PORT of the object store
	AdminToken string // what PlayPath asks for; WriteCredentials writes it to admin-token

	api, objects *http.Server
	wg           sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error
}

// Listen creates an emulator and serves its API on apiAddr and its object store
// on objectsAddr (port 0 picks a free port). Close stops both.
func Listen(opts Options, apiAddr, objectsAddr string) (*Server, error) {
	apiLn, err := net.Listen("tcp", apiAddr)
	if err != nil {
		return nil, fmt.Errorf("emulator: listen %s: %w", apiAddr, err)
	}
	objLn, err := net.Listen("tcp", objectsAddr)
	if err != nil {
		apiLn.Close()
		return nil, fmt.Errorf("emulator: listen %s: %w", objectsAddr, err)
	}
	e, err := New(opts)
	if err != nil {
		apiLn.Close()
		objLn.Close()
		return nil, err
	}
	s := &Server{
		Emulator:   e,
		APIURL:     "http://" + apiLn.Addr().String(),
		ObjectsURL: "http://" + objLn.Addr().String(),
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		apiLn.Close()
		objLn.Close()
		e.Close()
		return nil, err
	}
	s.AdminToken = hex.EncodeToString(token)
	e.store.SetBaseURL(s.ObjectsURL)
	mux := http.NewServeMux()
	mux.Handle("GET "+StatsPath, http.HandlerFunc(e.serveStats))
	mux.Handle(PlayPath, http.HandlerFunc(s.servePlay))
	mux.Handle("/", e.withOutages(e.Handler()))
	s.api = &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	s.objects = &http.Server{Handler: e.withOutages(e.store), ReadHeaderTimeout: time.Minute}
	for _, p := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{s.api, apiLn}, {s.objects, objLn}} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				e.log.WithError(err).Error("serving")
			}
		}()
	}
	return s, nil
}

// Credentials returns the credentials of org-a and org-b, in that order.
func (s *Server) Credentials() []OrgCredentials {
	e := s.Emulator
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]OrgCredentials, 0, len(e.orgs))
	for _, o := range e.orgs {
		out = append(out, OrgCredentials{Name: o.name, Endpoint: s.APIURL, Key: o.key, Secret: o.secret})
	}
	return out
}

// WriteCredentials writes one credentials file per organization into dir
// (org-a.json, org-b.json) and the admin token of PlayPath (admin-token);
// files 0600, dir 0700, created if missing.
func (s *Server) WriteCredentials(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	for _, c := range s.Credentials() {
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		p := filepath.Join(dir, c.Name+".json")
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
			return err
		}
		if err := os.Chmod(tmp, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, AdminTokenFile), []byte(s.AdminToken+"\n"), 0o600)
}

// AdminTokenFile is the name of the admin token's file beside the credentials.
const AdminTokenFile = "admin-token"

// Close stops both listeners, waiting briefly (closeGrace) for requests in
// flight, and closes the emulator.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		// net/http's Shutdown waits up to 5 s for connections that were
		// accepted but never carried a request (a client's spare dials):
		// give requests in flight a short grace, then close everything.
		s.Emulator.net.close() // requests stalled in a black hole end
		ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
		defer cancel()
		var wg sync.WaitGroup
		for _, srv := range []*http.Server{s.api, s.objects} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Shutdown(ctx); err != nil {
					srv.Close()
				}
			}()
		}
		wg.Wait()
		s.wg.Wait()
		s.closeErr = s.Emulator.Close()
	})
	return s.closeErr
}

// closeGrace is how long Close waits for requests in flight.
const closeGrace = 300 * time.Millisecond
