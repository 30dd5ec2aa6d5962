package emulator

import (
	"math"
	"time"
)

// The JSON records of the interface. Every function here is called with
// Emulator.mu held.

type userJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	} `json:"attributes"`
}

func userRecord(u *user) *userJSON {
	if u == nil {
		return nil
	}
	r := &userJSON{ID: u.uuid, Type: "user"}
	r.Attributes.Email = u.email
	r.Attributes.Name = u.name
	return r
}

// fileJSON is the File or folder object.
type fileJSON struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Attributes fileAttrs `json:"attributes"`
}

type fileAttrs struct {
	Name             string    `json:"name"`
	Size             int64     `json:"size"`
	ContentType      string    `json:"content_type"`
	Region           string    `json:"region"`
	Status           string    `json:"status"`
	ObjectType       string    `json:"object_type"`
	Path             *string   `json:"path"`
	ParentID         int64     `json:"parent_id"`
	LastModifiedDate string    `json:"last_modified_date"`
	FileStorageSize  *int64    `json:"file_storage_size"`
	FileStorageUsage *int64    `json:"file_storage_usage"`
	User             *userJSON `json:"user"`
	MachineID        *int64    `json:"machine_id"`
}

func fileRecord(n *node) fileJSON {
	p := n.path()
	a := fileAttrs{
		Name:             n.name,
		Size:             n.size,
		ContentType:      n.contentType,
		Region:           n.org.storage,
		Status:           "upload_completed",
		ObjectType:       n.kind.String(),
		Path:             &p,
		LastModifiedDate: isoTime(n.modified),
		User:             userRecord(n.user),
	}
	if n.kind != kindFile {
		a.Size = 0
		a.ContentType = "directory"
	}
	if n.parent != nil {
		a.ParentID = n.parent.id
	}
	if n.kind == kindRoot {
		quota, used := n.area.quota, n.area.used
		a.FileStorageSize, a.FileStorageUsage = &quota, &used
	}
	if n.machineID != 0 {
		m := n.machineID
		a.MachineID = &m
	}
	return fileJSON{ID: itoa(n.id), Type: "file", Attributes: a}
}

func fileRecords(ns []*node) []fileJSON {
	out := make([]fileJSON, len(ns))
	for i, n := range ns {
		out[i] = fileRecord(n)
	}
	return out
}

// seatJSON is the computer record of service-notes.md.
type seatJSON struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Attributes seatAttrs `json:"attributes"`
}

type seatAttrs struct {
	Name              string      `json:"name"`
	Status            string      `json:"status"`
	FriendlyStatus    string      `json:"friendly_status"`
	AutoStopThreshold int64       `json:"auto_stop_threshold"`
	FileStorageSize   int64       `json:"file_storage_size"`
	DiskSize          int64       `json:"disk_size"`
	NetworkCredit     int64       `json:"network_credit"`
	RemainingUsage    int64       `json:"remaining_usage"`
	DepositedUsage    int64       `json:"deposited_usage"`
	AssignedImageID   *int64      `json:"assigned_image_id"`
	AssignedImageName *string     `json:"assigned_image_name"`
	UsageSource       string      `json:"usage_source"`
	Permissions       permissions `json:"permissions"`
	User              *userJSON   `json:"user"`
	Machine           machineJSON `json:"machine"`
	Task              *taskJSON   `json:"task"`
}

type machineJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Status             string  `json:"status"`
		Name               string  `json:"name"`
		Region             string  `json:"region"`
		LastSessionStartAt *string `json:"last_session_start_at"`
		MachineType        string  `json:"machine_type"`
	} `json:"attributes"`
}

type taskJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Name           string `json:"name"`
		Status         string `json:"status"`
		OutputFolderID *int64 `json:"output_folder_id"`
		CreatedAt      string `json:"created_at"`
	} `json:"attributes"`
}

// machineStatus is the nested machine's status for a friendly status.
func machineStatus(friendly string) string {
	switch friendly {
	case stOff:
		return "stopped"
	case stReady:
		return "running"
	case stTurningOn:
		return "starting"
	case stTurningOff, stGracefulStopping:
		return "stopping"
	default:
		return friendly
	}
}

// seatRecord renders a computer. Its file_storage_size and disk_size are GB
// (of 2^30 bytes, as its storage root's byte count reads), or bytes in the
// dialect storage-bytes.
func (d Dialect) seatRecord(s *seat) seatJSON {
	a := seatAttrs{
		Name:              s.name,
		Status:            "active",
		FriendlyStatus:    s.status,
		AutoStopThreshold: s.autoStop,
		FileStorageSize:   s.area.quota / gib,
		DiskSize:          s.diskGB,
		NetworkCredit:     s.networkCredit,
		RemainingUsage:    s.remainingUsage,
		DepositedUsage:    s.depositedUsage,
		UsageSource:       s.usageSource,
		Permissions:       s.perms,
		User:              userRecord(s.user),
	}
	if d.StorageBytes {
		a.FileStorageSize, a.DiskSize = s.area.quota, s.diskGB*gib
	}
	if s.assigned != nil {
		id, name := s.assigned.id, s.assigned.name
		a.AssignedImageID, a.AssignedImageName = &id, &name
	}
	m := machineJSON{ID: itoa(s.id), Type: "machine"}
	m.Attributes.Status = machineStatus(s.status)
	m.Attributes.Name = s.name
	m.Attributes.Region = s.region
	if !s.lastSession.IsZero() {
		t := isoTime(s.lastSession)
		m.Attributes.LastSessionStartAt = &t
	}
	m.Attributes.MachineType = s.machineType.friendly
	a.Machine = m
	if t := s.task; t != nil {
		tj := &taskJSON{ID: itoa(t.id), Type: "task"}
		tj.Attributes.Name = t.name
		tj.Attributes.Status = "completed"
		if t.output != nil && !t.output.deleted {
			id := t.output.id
			tj.Attributes.OutputFolderID = &id
		}
		tj.Attributes.CreatedAt = isoTime(t.created)
		a.Task = tj
	}
	return seatJSON{ID: itoa(s.id), Type: "seat", Attributes: a}
}

// imageJSON is the Image (template) object.
type imageJSON struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Attributes imageAttrs `json:"attributes"`
}

type imageAttrs struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Size      any    `json:"size"` // float64 GB, or int64 bytes
	Status    string `json:"status"`
	Source    string `json:"source"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	Softwares any    `json:"softwares"`
}

type softwareJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		ID   int64   `json:"id"`
		Name string  `json:"name"`
		Size float64 `json:"size"`
	} `json:"attributes"`
}

// imageRecord renders an image. wrapped gives the software list as
// {"data": [...]}, the shape of the install endpoint's example; elsewhere it
// is a plain array, the shape of the list endpoint's example (the dialect
// softwares-swapped turns both around). The size is GB with two decimals,
// or bytes in the dialect image-size-bytes.
func (d Dialect) imageRecord(im *image, wrapped bool) imageJSON {
	sw := make([]softwareJSON, len(im.software))
	for i, s := range im.software {
		sw[i] = softwareJSON{ID: itoa(s.id), Type: "software"}
		sw[i].Attributes.ID = s.id
		sw[i].Attributes.Name = s.name
		sw[i].Attributes.Size = d.softwareSize(s.size)
	}
	var softwares any = sw
	if wrapped != d.SoftwaresSwapped {
		softwares = map[string]any{"data": sw}
	}
	var size any = im.sizeGB
	if d.ImageSizeBytes {
		size = int64(math.Round(im.sizeGB * 1e9))
	}
	return imageJSON{ID: itoa(im.id), Type: "image", Attributes: imageAttrs{
		ID: im.id, Name: im.name, Size: size, Status: im.status, Source: im.source,
		CreatedAt: isoTime(im.created), UpdatedAt: isoTime(im.updated), Softwares: softwares,
	}}
}

// softwareSize is a software size in bytes as the dialect gives it: bytes,
// or fractional GB (three decimals) in the dialect software-size-gb.
func (d Dialect) softwareSize(bytes float64) float64 {
	if d.SoftwareSizeGB {
		return math.Round(bytes/1e9*1000) / 1000
	}
	return bytes
}

// roundGB rounds a size in GB to two decimals.
func roundGB(bytes float64) float64 {
	return math.Round(bytes/1e9*100) / 100
}

// jobJSON is the Download job record.
type jobJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Status      string `json:"status"`
		DownloadURL string `json:"download_url,omitempty"`
		ExpiresAt   string `json:"expires_at"`
		Size        *int64 `json:"size"`
	} `json:"attributes"`
}

func (e *Emulator) jobRecord(j *job, now time.Time, withURL bool) jobJSON {
	r := jobJSON{ID: itoa(j.id), Type: "download"}
	r.Attributes.Status = j.status(now, e.step)
	r.Attributes.ExpiresAt = isoTime(j.expires)
	size := j.size
	r.Attributes.Size = &size
	if withURL && r.Attributes.Status == jobUploaded {
		ttl := min(downloadURLTTL, j.expires.Sub(now))
		r.Attributes.DownloadURL = e.store.PresignGet(zipKey(j.id), ttl, j.name)
	}
	return r
}

// logJSON is an action log record.
type logJSON struct {
	ID         int64          `json:"id"`
	ActionType string         `json:"action_type"`
	UserID     int64          `json:"user_id"`
	UserEmail  string         `json:"user_email"`
	MachineID  *int64         `json:"machine_id"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  string         `json:"created_at"`
}

func logRecordJSON(l *logRecord) logJSON {
	r := logJSON{ID: l.id, ActionType: l.actionType, Metadata: l.metadata, CreatedAt: isoTime(l.created)}
	if l.user != nil {
		r.UserID, r.UserEmail = l.user.intID, l.user.email
	}
	if l.machineID != 0 {
		m := l.machineID
		r.MachineID = &m
	}
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	return r
}
