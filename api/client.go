// Package api is the typed client of the organization management service
// (spec/organization-api.md): one method per endpoint, HMAC request signing
// as an http.RoundTripper (with the service's clock, learned from its
// answers: skew.go), typed errors carrying the service's client_code,
// pagination as iterators, retries with backoff as one decorator used by
// every call, and helpers for multipart uploads, ranged downloads and bundle
// download jobs through presigned object-storage URLs.
//
// Its files and its locks are in docs/ARCHITECTURE.md.
package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
)

// PathPrefix is the fixed prefix of every path of the interface.
const PathPrefix = "/organization-management/v1"

// maxResponseBody bounds the body of an API answer the client reads.
const maxResponseBody = 64 << 20

// Options configures a Client. Zero fields take the value of DefaultOptions.
type Options struct {
	// Transport is the base transport of API requests; the client wraps it
	// with HMAC signing. Default: a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// ObjectTransport is the base transport of presigned object-storage
	// URLs; it is never wrapped with signing. Default: Transport when set,
	// else a clone of http.DefaultTransport.
	ObjectTransport http.RoundTripper
	// Clock gives the time of request signatures and of URL expiry checks.
	// Default: time.Now.
	Clock func() time.Time
	// Logger receives debug lines for every request (never a secret, a
	// signature or a presigned URL's query). Default: logrus's standard logger.
	Logger logrus.FieldLogger
	// UserAgent is sent with every request.
	UserAgent string
	// PerPage is the per_page of list requests (images, computers, files).
	PerPage int
	// AttemptTimeout bounds one API request attempt (not object transfers,
	// which callers bound with their context).
	AttemptTimeout time.Duration
	// IOTimeout cuts any transfer (API or object storage) that waits this
	// long without a byte moving: no answer, a stalled body, a request body
	// not taken. The cut is a temporary *StallError, retried by the policy.
	IOTimeout time.Duration
	// MaxAttempts bounds the attempts of one call, the first included.
	MaxAttempts int
	// MaxRetryTime bounds the time from the first attempt of a call after
	// which no further attempt is started.
	MaxRetryTime time.Duration
	// BaseBackoff and MaxBackoff shape the exponential backoff with full
	// jitter between attempts.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// NoReach turns off the reach rules (reach.go): a failure with no
	// answer is only retried by the policy, and the client never says it
	// is offline. For tests of the retry policy against a server that cuts
	// or refuses every connection (which the rules call offline).
	NoReach bool
	// AccessUnit is the unit the service reads expires_in of an access link
	// in: AccessUnitAuto (judged from the expiry of the first link it
	// answers; minutes until then), AccessUnitMinutes (the interface
	// document) or AccessUnitSeconds (the official example client).
	// Default: the environment's ORGFS_API_ACCESS_UNIT, else auto.
	AccessUnit string
}

// AccessUnitEnv names the environment variable that sets the default of
// Options.AccessUnit.
const AccessUnitEnv = "ORGFS_API_ACCESS_UNIT"

// Values of Options.AccessUnit.
const (
	AccessUnitAuto    = "auto"
	AccessUnitMinutes = "minutes"
	AccessUnitSeconds = "seconds"
)

// DefaultOptions returns the defaults of every Options field: the one place
// where they are written.
func DefaultOptions() Options {
	return Options{
		Clock:          time.Now,
		Logger:         logrus.StandardLogger(),
		UserAgent:      "orgfs",
		PerPage:        100,
		AttemptTimeout: 60 * time.Second,
		IOTimeout:      60 * time.Second,
		MaxAttempts:    6,
		MaxRetryTime:   2 * time.Minute,
		BaseBackoff:    250 * time.Millisecond,
		MaxBackoff:     15 * time.Second,
		AccessUnit:     cmp.Or(os.Getenv(AccessUnitEnv), AccessUnitAuto),
	}
}

// AddFlags registers the tunable options (page size, timeouts, retry policy)
// on fs, with the defaults as default values where o leaves them zero.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fill := o.withDefaults()
	fs.IntVar(&o.PerPage, "api-per-page", fill.PerPage, "records per page of list requests")
	fs.DurationVar(&o.AttemptTimeout, "api-timeout", fill.AttemptTimeout, "timeout of one API request attempt")
	fs.DurationVar(&o.IOTimeout, "io-timeout", fill.IOTimeout, "cut a request or transfer that moves no byte for this long (then retried)")
	fs.IntVar(&o.MaxAttempts, "api-max-attempts", fill.MaxAttempts, "attempts per API call, the first included")
	fs.DurationVar(&o.MaxRetryTime, "api-max-retry-time", fill.MaxRetryTime, "time after which a failing API call is not retried")
	fs.DurationVar(&o.BaseBackoff, "api-backoff", fill.BaseBackoff, "first retry backoff (grows exponentially, with jitter)")
	fs.DurationVar(&o.MaxBackoff, "api-max-backoff", fill.MaxBackoff, "largest retry backoff")
	fs.StringVar(&o.AccessUnit, "api-access-unit", fill.AccessUnit, "unit the service reads an access link's expires_in in: auto (told by the first link's expiry), minutes or seconds")
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Clock == nil {
		o.Clock = d.Clock
	}
	if o.Logger == nil {
		o.Logger = d.Logger
	}
	if o.UserAgent == "" {
		o.UserAgent = d.UserAgent
	}
	if o.PerPage == 0 {
		o.PerPage = d.PerPage
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = d.AttemptTimeout
	}
	if o.IOTimeout == 0 {
		o.IOTimeout = d.IOTimeout
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = d.MaxAttempts
	}
	if o.MaxRetryTime == 0 {
		o.MaxRetryTime = d.MaxRetryTime
	}
	if o.BaseBackoff == 0 {
		o.BaseBackoff = d.BaseBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	if o.AccessUnit == "" {
		o.AccessUnit = d.AccessUnit
	}
	return o
}

// Validate checks the options (zero fields stand for their defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.PerPage < 1:
		return errors.New("api: options: per-page must be at least 1")
	case o.AttemptTimeout < 0:
		return errors.New("api: options: the attempt timeout must not be negative")
	case o.IOTimeout < 0:
		return errors.New("api: options: the I/O timeout must not be negative")
	case o.MaxAttempts < 1:
		return errors.New("api: options: max attempts must be at least 1")
	case o.MaxRetryTime < 0:
		return errors.New("api: options: the max retry time must not be negative")
	case o.BaseBackoff < 0 || o.MaxBackoff < 0:
		return errors.New("api: options: backoffs must not be negative")
	case o.MaxBackoff < o.BaseBackoff:
		return errors.New("api: options: the max backoff must not be less than the base backoff")
	case o.AccessUnit != AccessUnitAuto && o.AccessUnit != AccessUnitMinutes && o.AccessUnit != AccessUnitSeconds:
		return fmt.Errorf("api: options: access unit %q (%s or --api-access-unit): want auto, minutes or seconds", o.AccessUnit, AccessUnitEnv)
	}
	return nil
}

// Client is the typed client of the service. It is safe for concurrent use.
type Client struct {
	// dependencies
	api     *http.Client // signing transport; never follows redirects
	objects *http.Client // presigned URLs: no signing, no credentials
	log     logrus.FieldLogger
	clock   func() time.Time
	// svcClock is the service's clock as answers tell it: signatures carry
	// its time (skew.go).
	svcClock *serviceClock
	// constants
	base *url.URL // endpoint + PathPrefix
	opts Options
	// mutable state (atomic)
	stats statsRegistry
	// what the client learned of the service's reading of the contract
	// (dialect.go)
	dialect learnedDialect
	// whether the service can be reached (reach.go)
	reach *reach
}

// String describes the client without its credentials.
func (c *Client) String() string { return "api.Client{" + c.base.String() + "}" }

// GoString describes the client without its credentials.
func (c *Client) GoString() string { return c.String() }

// Format implements fmt.Formatter so that no verb prints the client's
// fields (the signing transport holds the secret).
func (c *Client) Format(f fmt.State, verb rune) { io.WriteString(f, c.String()) }

// New returns a client of the service at creds.Endpoint.
func New(creds Credentials, opts Options) (*Client, error) {
	if err := creds.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	base, err := endpointURL(creds.Endpoint)
	if err != nil {
		return nil, err
	}
	apiBase := opts.Transport
	if apiBase == nil {
		apiBase = defaultTransport()
	}
	objBase := opts.ObjectTransport
	if objBase == nil {
		objBase = opts.Transport
	}
	if objBase == nil {
		objBase = defaultTransport()
	}
	c := &Client{
		log:      opts.Logger,
		clock:    opts.Clock,
		svcClock: &serviceClock{local: opts.Clock, log: opts.Logger},
		base:     base,
		opts:     opts,
	}
	c.reach = newReach(c.probe, opts.Logger, opts.IOTimeout)
	apiBase = &reachGuard{base: &stallGuard{base: apiBase, timeout: opts.IOTimeout}, r: c.reach, off: opts.NoReach, answers: true}
	objBase = &reachGuard{base: &stallGuard{base: objBase, timeout: opts.IOTimeout}, r: c.reach, off: opts.NoReach}
	c.api = &http.Client{
		Transport: &signer{base: apiBase, clock: c.svcClock.now, key: creds.Key, secret: creds.Secret, scheme: base.Scheme, host: base.Host},
		// The API answers directly; a redirect is an answer (an error).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.objects = &http.Client{
		Transport: &presignedTransport{base: objBase},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
	return c, nil
}

func defaultTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// PerPage returns the per_page the client uses for lists.
func (c *Client) PerPage() int { return c.opts.PerPage }

// call is one API operation.
type call struct {
	op     string     // key of retryTable and Stats
	method string     // GET, POST, DELETE
	path   string     // below PathPrefix, ids filled in, no query
	query  url.Values // may be nil
	body   any        // JSON-encoded when not nil
	out    any        // filled from a successful answer when not nil
}

// do performs an API call with retries. Its error is always an *Error.
func (c *Client) do(ctx context.Context, cl call) (outcome, error) {
	opName := cl.method + " " + cl.path
	var body []byte
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return outcome{}, &Error{Op: opName, Err: err}
		}
		body = b
	}
	u := *c.base
	u.Path += cl.path
	if len(cl.query) > 0 {
		u.RawQuery = cl.query.Encode()
	}
	target := u.String()
	out, err := c.withRetry(ctx, cl.op, func(ctx context.Context, attempt int) error {
		return c.attempt(ctx, cl, opName, target, body, attempt)
	})
	if err == nil {
		return out, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Op: opName, Err: err}
	}
	return out, e
}

// attempt sends one request of cl and decodes its answer.
func (c *Client) attempt(ctx context.Context, cl call, opName, target string, body []byte, attempt int) error {
	if c.opts.AttemptTimeout > 0 {
		// An attempt that runs out of time is a temporary failure (the
		// service may answer the next one), unlike the caller's own
		// deadline or cancellation.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.AttemptTimeout, &StallError{After: c.opts.AttemptTimeout})
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, target, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	start := time.Now()
	fields := logrus.Fields{"method": cl.method, "path": cl.path, "attempt": attempt}
	signedOff, _ := c.svcClock.skew()
	sent := c.clock()
	resp, err := c.api.Do(req)
	got := c.clock()
	if err != nil {
		err = attemptError(ctx, cleanTransportError(err))
		fields["duration"] = time.Since(start).Round(time.Microsecond)
		c.log.WithFields(fields).WithField("error", err).Debug("api request failed")
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	fields["status"] = resp.StatusCode
	fields["duration"] = time.Since(start).Round(time.Microsecond)
	if err != nil {
		err = attemptError(ctx, err)
		c.log.WithFields(fields).WithField("error", err).Debug("api answer cut")
		return err
	}
	if len(data) > maxResponseBody {
		return &Error{Op: opName, HTTPStatus: resp.StatusCode, Err: fmt.Errorf("%w: answer larger than %d bytes", ErrMalformedResponse, maxResponseBody)}
	}
	code, stamp, derr := decodeAnswer(opName, resp.StatusCode, resp.Header, data, cl.out, c.clock())
	off, told := c.svcClock.observe(sent, got, resp.Header, stamp)
	if e, ok := derr.(*Error); ok && told && e.Code == CodeUnauthorized && (off-signedOff).Abs() >= skewRetryMin {
		// Refused, and signed with a clock this far off the service's: the
		// retry (retry.go) is signed with the offset just learned.
		e.clockRefused = true
	}
	fields["client_code"] = code
	c.log.WithFields(fields).Debug("api request")
	return derr
}

// OpStats are the counters of one operation.
type OpStats struct {
	Requests int64 `json:"requests"` // HTTP requests sent (attempts, retries included)
	Retries  int64 `json:"retries"`  // attempts after the first
	Failures int64 `json:"failures"` // calls that ended in an error (after retries)
}

// Stats is a snapshot of the client's counters.
type Stats struct {
	Requests, Retries, Failures int64 // totals over all operations
	BytesUploaded               int64 // part bytes accepted by the object store
	BytesDownloaded             int64 // object bytes read
	// Ops holds the counters per operation, keyed like "GET /files",
	// "POST /files/{id}/complete", "PUT object part", "GET object".
	Ops map[string]OpStats
	// Errors counts the calls that failed, by the service's client_code
	// ("404", "4710"), the object store's HTTP status ("object 403"),
	// "transport" (no answer after the retries) or "canceled".
	Errors map[string]int64
}

type opCounters struct {
	requests, retries, failures atomic.Int64
}

type statsRegistry struct {
	ops       sync.Map // string → *opCounters
	errors    sync.Map // string → *atomic.Int64, see Stats.Errors
	bytesUp   atomic.Int64
	bytesDown atomic.Int64
}

func (r *statsRegistry) op(name string) *opCounters {
	if v, ok := r.ops.Load(name); ok {
		return v.(*opCounters)
	}
	v, _ := r.ops.LoadOrStore(name, new(opCounters))
	return v.(*opCounters)
}

// failed counts a call of op that ended in err.
func (r *statsRegistry) failed(op *opCounters, err error) {
	op.failures.Add(1)
	key := "transport"
	var e *Error
	var oe *ObjectError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && !IsStall(err):
		key = "canceled"
	case errors.As(err, &e) && e.Code != 0:
		key = strconv.Itoa(e.Code)
	case errors.As(err, &e) && e.HTTPStatus != 0:
		key = strconv.Itoa(e.HTTPStatus)
	case errors.As(err, &oe):
		key = "object " + strconv.Itoa(oe.HTTPStatus)
	}
	v, ok := r.errors.Load(key)
	if !ok {
		v, _ = r.errors.LoadOrStore(key, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	s := Stats{Ops: map[string]OpStats{}, Errors: map[string]int64{}, BytesUploaded: c.stats.bytesUp.Load(), BytesDownloaded: c.stats.bytesDown.Load()}
	c.stats.errors.Range(func(k, v any) bool {
		s.Errors[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	c.stats.ops.Range(func(k, v any) bool {
		oc := v.(*opCounters)
		o := OpStats{Requests: oc.requests.Load(), Retries: oc.retries.Load(), Failures: oc.failures.Load()}
		s.Ops[k.(string)] = o
		s.Requests += o.Requests
		s.Retries += o.Retries
		s.Failures += o.Failures
		return true
	})
	return s
}

// pathf builds a path below PathPrefix from a format with integer ids.
func pathf(format string, ids ...any) string { return fmt.Sprintf(format, ids...) }

// emptyBody is the JSON body of POSTs without parameters.
var emptyBody = struct{}{}

// attemptError is err, or the attempt's timeout when that is what ended it.
func attemptError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); IsStall(cause) {
		return cause
	}
	return err
}
