package api

import "context"

// Usage returns the organization's remaining usage (GET /usage).
func (c *Client) Usage(ctx context.Context) (*AccountUsage, error) {
	var out AccountUsage
	if _, err := c.do(ctx, call{op: opUsage, method: "GET", path: "/usage", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// MachinesUsage returns the usage of every computer (GET /usage/machines).
func (c *Client) MachinesUsage(ctx context.Context) (*MachinesUsage, error) {
	var out MachinesUsage
	if _, err := c.do(ctx, call{op: opMachinesUsage, method: "GET", path: "/usage/machines", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// MachineUsage returns one computer's usage (GET /usage/machines/{id}).
func (c *Client) MachineUsage(ctx context.Context, machineID int64) (*MachineUsage, error) {
	var out MachineUsage
	if _, err := c.do(ctx, call{op: opMachineUsage, method: "GET", path: pathf("/usage/machines/%d", machineID), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

type usageMove struct {
	MachineID int64 `json:"machine_id"`
	Minutes   int64 `json:"minutes"`
}

// AssignUsage moves minutes from the team balance to a computer
// (POST /usage/assign). Not retried unless provably unsent.
func (c *Client) AssignUsage(ctx context.Context, machineID, minutes int64) (*AssignResult, error) {
	var out AssignResult
	body := usageMove{MachineID: machineID, Minutes: minutes}
	if _, err := c.do(ctx, call{op: opAssignUsage, method: "POST", path: "/usage/assign", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetrieveUsage moves extra assigned minutes from a computer back to the
// team balance (POST /usage/retrieve). Not retried unless provably unsent.
func (c *Client) RetrieveUsage(ctx context.Context, machineID, minutes int64) (*RetrieveResult, error) {
	var out RetrieveResult
	body := usageMove{MachineID: machineID, Minutes: minutes}
	if _, err := c.do(ctx, call{op: opRetrieveUsage, method: "POST", path: "/usage/retrieve", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
