package emulator

// Usage: the organization's balance in minutes and each computer's assigned
// minutes. A computer's usage_minutes is its own remaining minutes, plus the
// team balance when its usage_source is team_balance.

type machineUsage struct {
	MachineID    int64  `json:"machine_id"`
	MachineName  string `json:"machine_name"`
	UsageMinutes int64  `json:"usage_minutes"`
	MachineType  string `json:"machine_type"`
	UsageSource  string `json:"usage_source"`
}

func machineUsageOf(s *seat) machineUsage {
	m := s.remainingUsage
	if s.usageSource == "team_balance" {
		m += s.org.usageMinutes
	}
	return machineUsage{MachineID: s.id, MachineName: s.name, UsageMinutes: m, MachineType: s.machineType.friendly, UsageSource: s.usageSource}
}

// GET /usage
func (e *Emulator) getUsage(c *call) (any, error) {
	return map[string]any{"usage_minutes": c.org.usageMinutes, "machine_type": c.org.machineType.friendly}, nil
}

// GET /usage/machines
func (e *Emulator) getUsageMachines(c *call) (any, error) {
	seats := e.orgSeats(c.org)
	out := make([]machineUsage, len(seats))
	for i, s := range seats {
		out[i] = machineUsageOf(s)
	}
	return map[string]any{"machines": out, "count": len(out)}, nil
}

// GET /usage/machines/{id}: 4709 for a machine without a seat.
func (e *Emulator) getUsageMachine(c *call) (any, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	if e.seatless[id] == c.org {
		return nil, errf(4709, "seat not found for computer %d", id)
	}
	s, err := e.lookupSeat(c.org, id)
	if err != nil {
		return nil, err
	}
	return machineUsageOf(s), nil
}

type minutesRequest struct {
	MachineID *int64 `json:"machine_id"`
	Minutes   *int64 `json:"minutes"`
}

func (e *Emulator) decodeMinutes(c *call) (*seat, int64, error) {
	var req minutesRequest
	if err := c.decode(&req); err != nil {
		return nil, 0, err
	}
	if req.MachineID == nil || req.Minutes == nil {
		return nil, 0, badRequest("machine_id and minutes are required")
	}
	if *req.Minutes <= 0 {
		return nil, 0, badRequest("minutes must be positive")
	}
	s, err := e.lookupSeat(c.org, *req.MachineID)
	if err != nil {
		return nil, 0, err
	}
	return s, *req.Minutes, nil
}

// POST /usage/assign: 480 when minutes exceed the team balance.
func (e *Emulator) postUsageAssign(c *call) (any, error) {
	s, minutes, err := e.decodeMinutes(c)
	if err != nil {
		return nil, err
	}
	if minutes > c.org.usageMinutes {
		return nil, errf(480, "insufficient organization balance: %d minutes available, %d requested", c.org.usageMinutes, minutes)
	}
	c.org.usageMinutes -= minutes
	s.remainingUsage += minutes
	s.depositedUsage += minutes
	e.appendLog(c.org, "usage_assigned", c.org.admin, s.id, map[string]any{"minutes": minutes, "machine_name": s.name}, c.now)
	return map[string]any{"assigned_minutes": minutes, "machine_id": s.id, "machine_type": s.machineType.friendly}, nil
}

// POST /usage/retrieve: 480 when minutes exceed the computer's remaining usage.
func (e *Emulator) postUsageRetrieve(c *call) (any, error) {
	s, minutes, err := e.decodeMinutes(c)
	if err != nil {
		return nil, err
	}
	if s.remainingUsage == 0 {
		return nil, errf(480, "no usages left in computer %d", s.id)
	}
	if minutes > s.remainingUsage {
		return nil, errf(480, "computer %d has %d minutes left, %d requested", s.id, s.remainingUsage, minutes)
	}
	s.remainingUsage -= minutes
	c.org.usageMinutes += minutes
	e.appendLog(c.org, "usage_retrieved", c.org.admin, s.id, map[string]any{"minutes": minutes, "machine_name": s.name}, c.now)
	return map[string]any{"retrieved_minutes": minutes, "machine_id": s.id, "machine_type": s.machineType.friendly}, nil
}
