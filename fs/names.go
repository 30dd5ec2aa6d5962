package fs

// The names a mount shows and takes: service names made safe and unique as
// path components, the probe names that never reach the service, and the
// checks of the names given to create, mkdir and rename.
//
// Locks: none (pure functions, and a folder's checkNew).

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// probeName reports whether name is one that desktops and platforms look up
// on every drive and the service never holds (macOS resource forks and
// indexes, Windows and Linux desktop files, trash folders), or one longer
// than any name shown (over 255 bytes: FUSE passes lookups of such names to
// the daemon, up to the kernel's path limit). Such lookups answer ENOENT from
// memory, with no request.
func probeName(name string) bool {
	if len(name) > maxName {
		return true
	}
	if strings.HasPrefix(name, "._") || strings.HasPrefix(name, ".Trash") {
		return true
	}
	switch strings.ToLower(name) {
	case ".ds_store", "desktop.ini", "thumbs.db", ".hidden", "autorun.inf", ".xdg-volume-info",
		".spotlight-v100", ".fseventsd", ".metadata_never_index", ".localized", ".directory":
		return true
	}
	return false
}

// safeName makes a service name usable as one path component: '/' becomes
// '／' (U+FF0F FULLWIDTH SOLIDUS), NUL is dropped, and the names "", "." and
// ".." get a trailing '_'.
func safeName(name string) string {
	name = strings.ReplaceAll(name, "/", "／")
	name = strings.ReplaceAll(name, "\x00", "")
	switch name {
	case "", ".", "..":
		name += "_"
	}
	return name
}

// named is an item to be given a unique, path-safe name.
type named struct {
	name string // as the service has it
	id   int64
}

// ComputerNames are the names of the computers' folders in computers/, in
// the order of seats; the control tree's machines/<id>/files links to them.
func ComputerNames(seats []api.Seat) []string {
	items := make([]named, len(seats))
	for i, s := range seats {
		items[i] = named{s.Name, s.ID}
	}
	return uniqueNames(items)
}

// maxName is the longest name a path component may have (bytes).
const maxName = 255

// uniqueNames gives each item a path-safe name unique among them. Every item of
// a clashing group gets " (<id>)" appended, so a name does not depend on which
// item the service lists first and stays stable while the names do. A name
// that still clashes (a service name that already reads "x (7)") or is too
// long gets its id again, shortened to fit. The result is in the order of
// items.
func uniqueNames(items []named) []string {
	out := make([]string, len(items))
	count := make(map[string]int, len(items))
	for i, it := range items {
		out[i] = safeName(it.name)
		count[out[i]]++
	}
	for i, it := range items {
		if count[out[i]] > 1 || len(out[i]) > maxName {
			out[i] = withID(out[i], it.id)
		}
	}
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		for n := 0; seen[out[i]]; n++ {
			if n < 3 {
				out[i] = withID(out[i], it.id)
				continue
			}
			// withID may give the same name again (a cut name already ending
			// in its suffix), and other items may hold every name it gives:
			// " (id.n)" endings differ for every n, so this ends.
			out[i] = withSuffix(safeName(it.name), " ("+strconv.FormatInt(it.id, 10)+"."+strconv.Itoa(n)+")")
		}
		seen[out[i]] = true
	}
	return out
}

// withID appends " (id)" to name, cutting name (at a rune boundary) so the
// whole stays within maxName bytes.
func withID(name string, id int64) string {
	return withSuffix(name, " ("+strconv.FormatInt(id, 10)+")")
}

// withSuffix appends suffix to name, cutting name (at a rune boundary) so the
// whole stays within maxName bytes.
func withSuffix(name, suffix string) string {
	if len(name)+len(suffix) > maxName {
		cut := maxName - len(suffix)
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	return name + suffix
}

// Names made here. A name given to create, mkdir or as the new name of a
// rename is checked as the user gave it, before anything is staged, listed
// or sent: it is also the name the service gets (only service names are
// mapped for showing, by safeName, and a name that passes these checks shows
// unchanged). A name is refused when it is
//
//   - over 255 bytes: ENAMETOOLONG (the service refuses it, and no shown name
//     is that long);
//   - not valid UTF-8: EILSEQ (the service keeps names as UTF-8 text and
//     would turn every bad byte into U+FFFD, so different names would become
//     one file);
//   - in a computer's storage, a name Windows cannot hold: EINVAL, logged
//     with the reason. The computers run Windows, and a file it cannot name
//     could be uploaded but never opened there: names with < > : " / \ | ? *
//     or a control character (0x00-0x1F), the device names CON, PRN, AUX, NUL,
//     COM1-COM9 and LPT1-LPT9 (also COM¹-COM³ and LPT¹-LPT³, which Windows
//     counts too), in any ASCII case, alone or before an extension ("nul.txt",
//     "Com1.log", "con .txt"), and names ending in a dot or a space.
//
// Shared storage is not a Windows file system: only the first two apply
// there. Lookups of names over 255 bytes answer ENOENT without a request
// (probeName); other lookups are not checked, so every name the service has
// stays readable.

// checkName says why name cannot be made in a folder (machine: of a
// computer's storage): 0 and "" when it can.
func checkName(name string, machine bool) (syscall.Errno, string) {
	switch {
	case len(name) > maxName:
		return syscall.ENAMETOOLONG, fmt.Sprintf("the name is %d bytes, over the limit of %d", len(name), maxName)
	case !utf8.ValidString(name):
		return syscall.EILSEQ, fmt.Sprintf("the name is not valid UTF-8 (byte %#02x at offset %d)", name[badUTF8(name)], badUTF8(name))
	case name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"):
		return syscall.EINVAL, "not a file name"
	}
	if !machine {
		return 0, ""
	}
	for _, r := range name {
		if r < 0x20 {
			return syscall.EINVAL, fmt.Sprintf("Windows cannot hold a name with the control character %#02x", r)
		}
		if strings.ContainsRune(`<>:"\|?*`, r) {
			return syscall.EINVAL, fmt.Sprintf("Windows cannot hold a name with the character %q", r)
		}
	}
	if dev := deviceName(name); dev != "" {
		return syscall.EINVAL, fmt.Sprintf("%s is a device name on Windows", dev)
	}
	switch name[len(name)-1] {
	case '.':
		return syscall.EINVAL, "Windows cannot hold a name ending in a dot"
	case ' ':
		return syscall.EINVAL, "Windows cannot hold a name ending in a space"
	}
	return 0, ""
}

// badUTF8 is the offset of the first byte of name that is not valid UTF-8.
func badUTF8(name string) int {
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size == 1 {
				return i
			}
		}
	}
	return 0
}

// deviceName is the Windows device name (in capitals) that name stands for,
// or "": the part before the first dot, without trailing spaces, is CON, PRN,
// AUX, NUL, COM1-9 or LPT1-9 (or COM/LPT with ¹ ² ³) in any ASCII case.
func deviceName(name string) string {
	base, _, _ := strings.Cut(name, ".")
	base = strings.TrimRight(base, " ")
	if len(base) < 3 || len(base) > 5 {
		return ""
	}
	up := []byte(base)
	for i, c := range up {
		if 'a' <= c && c <= 'z' {
			up[i] = c - 'a' + 'A'
		}
	}
	dev := string(up)
	switch dev {
	case "CON", "PRN", "AUX", "NUL":
		return dev
	}
	if pre := dev[:3]; pre == "COM" || pre == "LPT" {
		switch dev[3:] {
		case "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return dev
		}
	}
	return ""
}

// checkNew vets a name about to be made in this folder (by Create, Mkdir, or
// as the new name of a Rename): the errno to answer, 0 if the name may be
// made. A refusal is logged with the path and the reason.
func (n *dirNode) checkNew(name string) syscall.Errno {
	errno, why := checkName(name, n.dirKey().Area.Kind == place.Machine)
	if errno == 0 {
		errno, why = n.linkReserved(name)
	}
	if errno != 0 {
		path := n.Path(nil) + "/" + name
		if !utf8.ValidString(path) {
			path = strconv.Quote(path)
		}
		n.fsys.log.WithFields(logrus.Fields{"path": path, "errno": errno.Error()}).Warn("refused the name " + path + ": " + why)
	}
	return errno
}
