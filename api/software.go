package api

import (
	"context"
	"encoding/json"
)

// Software returns the software catalog and the base images that can be
// pre-installed on new images and computers (GET /software).
func (c *Client) Software(ctx context.Context) (*SoftwareCatalog, error) {
	var w struct {
		Software   []Software      `json:"software"`
		BaseImages []BaseImage     `json:"base_images"`
		Data       json.RawMessage `json:"data"` // tolerated wrapper
	}
	if _, err := c.do(ctx, call{op: opSoftware, method: "GET", path: "/software", out: &w}); err != nil {
		return nil, err
	}
	if w.Software == nil && w.BaseImages == nil && len(w.Data) > 0 && w.Data[0] == '{' {
		_ = json.Unmarshal(w.Data, &w)
	}
	return &SoftwareCatalog{Software: w.Software, BaseImages: w.BaseImages}, nil
}
