package api

import (
	"context"
	"encoding/json"
	"iter"
	"net/url"
	"time"
)

// CreateSeatsRequest is the body of POST /seats.
type CreateSeatsRequest struct {
	SeatPlanID  int64        `json:"seat_plan_id"`          // plan id, from the service operator
	Quantity    int          `json:"quantity"`              // number of computers
	SoftwareIDs []int64      `json:"software_ids"`          // software to pre-install
	BaseImageID *int64       `json:"base_image_id"`         // nil: the latest base image (sent as null)
	Permissions *Permissions `json:"permissions,omitempty"` // nil: the service defaults
}

// CreateSeatsResult is the answer of POST /seats. The interface does not
// show it; the computers created are read from "seats" (or "data"), and Raw
// keeps the whole answer.
type CreateSeatsResult struct {
	Seats []Seat
	Count int64
	Raw   json.RawMessage
}

// UnmarshalJSON decodes the answer leniently.
func (r *CreateSeatsResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Seats []Seat          `json:"seats"`
		Data  json.RawMessage `json:"data"`
		Count lenientInt      `json:"count"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Seats == nil && len(w.Data) > 0 && w.Data[0] == '[' {
		if err := json.Unmarshal(w.Data, &w.Seats); err != nil {
			return err
		}
	}
	*r = CreateSeatsResult{Seats: w.Seats, Count: int64(w.Count), Raw: append(json.RawMessage(nil), b...)}
	if r.Count == 0 {
		r.Count = int64(len(r.Seats))
	}
	return nil
}

// CreateSeats creates computers from a plan (POST /seats). Not retried
// unless provably unsent.
func (c *Client) CreateSeats(ctx context.Context, req CreateSeatsRequest) (*CreateSeatsResult, error) {
	if req.SoftwareIDs == nil {
		req.SoftwareIDs = []int64{}
	}
	var out CreateSeatsResult
	if _, err := c.do(ctx, call{op: opCreateSeats, method: "POST", path: "/seats", body: req, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Seats iterates over the organization's computers, all pages (GET /seats).
// query, when not empty, is passed as q (a filter on the computer name).
func (c *Client) Seats(ctx context.Context, query string) iter.Seq2[Seat, error] {
	q := url.Values{}
	if query != "" {
		q.Set("q", query)
	}
	fetch := func(ctx context.Context, page int64) ([]Seat, *lenientInt, error) {
		var p struct {
			Seats    []Seat      `json:"seats"`
			NextPage *lenientInt `json:"next_page"`
		}
		_, err := c.do(ctx, call{op: opListSeats, method: "GET", path: "/seats", query: c.pageQuery(q, page), out: &p})
		return p.Seats, p.NextPage, err
	}
	return paginate(ctx, "GET /seats", fetch, func(s *Seat) int64 { return s.ID })
}

// StartOptions are the optional parameters of StartMachine.
type StartOptions struct {
	MachineTypeID int64  // 0: keep the current performance type
	Region        string // "": the current region
}

// StartMachine starts a computer (POST /machines/{id}/start). Not retried
// unless provably unsent.
func (c *Client) StartMachine(ctx context.Context, machineID int64, opts StartOptions) error {
	body := struct {
		MachineTypeID int64  `json:"machine_type_id,omitempty"`
		Region        string `json:"region,omitempty"`
	}{opts.MachineTypeID, opts.Region}
	_, err := c.computerCall(ctx, call{op: opStartMachine, method: "POST", body: body}, machineID, "start", nil)
	return err
}

// StopMachine stops a computer (POST /machines/{id}/stop); gracefully
// avoids interrupting file operations. Not retried unless provably unsent.
func (c *Client) StopMachine(ctx context.Context, machineID int64, gracefully bool) error {
	body := struct {
		Gracefully bool `json:"gracefully"`
	}{gracefully}
	_, err := c.computerCall(ctx, call{op: opStopMachine, method: "POST", body: body}, machineID, "stop", nil)
	return err
}

// AccessLink returns a link to access a computer (POST /machines/{id}/access),
// valid expiresInMinutes minutes (0: the service default). The interface
// document counts expires_in in minutes, the example client in seconds:
// with Options.AccessUnit auto, the first link's lifetime tells which (a
// link of N minutes that lives N seconds), and a link that came out in
// seconds is asked again in the service's unit. The link is a credential:
// never log it. Retried (each attempt only makes a fresh link).
func (c *Client) AccessLink(ctx context.Context, machineID int64, expiresInMinutes int) (*AccessLink, error) {
	unit := c.accessUnitFor()
	w, err := c.accessLink(ctx, machineID, expiresInMinutes, unit)
	if err != nil || c.opts.AccessUnit != AccessUnitAuto || c.dialect.accessUnit.Load() != accessUnknown {
		return w, err
	}
	switch judgeAccessUnit(expiresInMinutes, w.ExpiresAt, w.answered) {
	case accessMinutes:
		c.dialect.accessUnit.CompareAndSwap(accessUnknown, accessMinutes)
	case accessSeconds:
		if c.dialect.accessUnit.CompareAndSwap(accessUnknown, accessSeconds) {
			c.log.Info("api: the service reads an access link's expires_in in seconds; asking in seconds from now on")
		}
		return c.accessLink(ctx, machineID, expiresInMinutes, accessSeconds)
	}
	return w, nil
}

// accessLink asks for one link of minutes minutes, sent in unit.
func (c *Client) accessLink(ctx context.Context, machineID int64, minutes int, unit int32) (*AccessLink, error) {
	n := minutes
	if unit == accessSeconds {
		n = minutes * 60
	}
	body := struct {
		ExpiresIn int `json:"expires_in,omitempty"`
	}{n}
	var w accessAnswer
	if _, err := c.computerCall(ctx, call{op: opAccessLink, method: "POST", body: body, out: &w}, machineID, "access", nil); err != nil {
		return nil, err
	}
	w.link.answered = time.Time(w.Timestamp)
	return &w.link, nil
}

// accessAnswer is the access link at the top level, or under "data", and
// the envelope's timestamp.
type accessAnswer struct {
	link      AccessLink
	Timestamp flexTime
}

func (a *accessAnswer) UnmarshalJSON(b []byte) error {
	var w struct {
		Data      json.RawMessage `json:"data"`
		Timestamp flexTime        `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	a.Timestamp = w.Timestamp
	if len(w.Data) > 0 && w.Data[0] == '{' {
		return json.Unmarshal(w.Data, &a.link)
	}
	return json.Unmarshal(b, &a.link)
}

// ResetMachine erases a computer's files and data and reverts it to its
// initial image (POST /machines/{id}/reset). Not retried unless provably unsent.
func (c *Client) ResetMachine(ctx context.Context, machineID int64) error {
	_, err := c.computerCall(ctx, call{op: opResetMachine, method: "POST", body: emptyBody}, machineID, "reset", nil)
	return err
}

// MachineTypes lists the performance types available to a computer
// (GET /machines/{id}/available-machine-types).
func (c *Client) MachineTypes(ctx context.Context, machineID int64) ([]MachineType, error) {
	var w struct {
		MachineTypes []MachineType   `json:"machine_types"`
		Data         json.RawMessage `json:"data"` // tolerated wrapper
	}
	if _, err := c.computerCall(ctx, call{op: opMachineTypes, method: "GET", out: &w}, machineID, "available-machine-types", nil); err != nil {
		return nil, err
	}
	if w.MachineTypes == nil && len(w.Data) > 0 && w.Data[0] == '[' {
		var types []MachineType
		if err := json.Unmarshal(w.Data, &types); err == nil {
			return types, nil
		}
	}
	return w.MachineTypes, nil
}

// SetMachineType sets a computer's performance type
// (POST /machines/{id}/machine-type) to an id from MachineTypes. Retried
// (setting the same value again is harmless).
func (c *Client) SetMachineType(ctx context.Context, machineID, machineTypeID int64) error {
	body := struct {
		MachineTypeID int64 `json:"machine_type_id"`
	}{machineTypeID}
	_, err := c.computerCall(ctx, call{op: opSetMachineType, method: "POST", body: body}, machineID, "machine-type", nil)
	return err
}

// ListContent lists a directory of a running computer's file system
// (POST /machines/{id}/list-content); path is a drive path such as
// `C:\Users`. The service answers 400 when the computer is not running.
func (c *Client) ListContent(ctx context.Context, machineID int64, path string) ([]ContentEntry, error) {
	body := struct {
		Path string `json:"path"`
	}{path}
	var w struct {
		Content []ContentEntry `json:"content"`
	}
	if _, err := c.computerCall(ctx, call{op: opListContent, method: "POST", body: body, out: &w}, machineID, "list-content", nil); err != nil {
		return nil, err
	}
	return w.Content, nil
}
