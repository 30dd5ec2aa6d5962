package fs

// Symbolic links. The service holds files and folders only, so a symlink
// NAME is kept there as a small file NAME.rclonelink whose content is the
// link's target: rclone's --links convention, so a storage also synced with
// rclone shows the same links on both sides. The mount shows such a file as
// the symlink NAME (mode 0777, the target's length as its size) and never
// under its own name; a symlink made here is a pending link file, staged
// and uploaded like any file (crash-safe, shown at once).
//
// A link is a fileNode with link set: it is staged, uploaded, renamed,
// unlinked and given times and owners as files are, under its service
// name. The folder maps the names (dirNode.staged, newDirView); this file
// holds what only links do: symlink, readlink, and the entry of the other
// kind a rename or a new link displaces (X and X.rclonelink are two
// service names for one name shown).
//
// Locks: fileNode.mu guards a link's cached target (a node's mu, docs/ARCHITECTURE.md);
// nothing is held across the fetch of a target.

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/writeback"
)

const (
	// linkSuffix ends the service name of a link file.
	linkSuffix = ".rclonelink"
	// maxLinkTarget is the longest target a link may have (bytes): PATH_MAX
	// less its NUL.
	maxLinkTarget = 4095
)

var (
	_ = (gofs.NodeSymlinker)((*dirNode)(nil))
	_ = (gofs.NodeReadlinker)((*fileNode)(nil))
)

// linkBase is the name shown for a link file of service name raw: raw
// without its suffix; ok is false when raw names no link file (".rclonelink"
// alone is a plain file's name).
func linkBase(raw string) (name string, ok bool) {
	if len(raw) <= len(linkSuffix) || !strings.HasSuffix(raw, linkSuffix) {
		return "", false
	}
	return raw[:len(raw)-len(linkSuffix)], true
}

// isLinkFile reports whether service file f is a link file (links on).
func isLinkFile(f api.File) bool {
	_, ok := linkBase(f.Name)
	return ok && !f.IsDir()
}

// isLink reports whether the mount shows service file f as a symlink.
func (f *FS) isLink(file api.File) bool { return !f.opts.NoLinks && isLinkFile(file) }

// isLinkStaged reports whether the mount shows pending file st as a symlink.
func (f *FS) isLinkStaged(st *writeback.Staged) bool {
	_, ok := linkBase(st.Target().Name)
	return ok && !f.opts.NoLinks
}

// shownName is the name a folder shows for service file f (before clashes
// are resolved): a link file's without its suffix.
func shownName(f api.File, links bool) string {
	if name, ok := linkBase(f.Name); ok && links && !f.IsDir() {
		return name
	}
	return f.Name
}

// linkFiles leaves out of a listing the link files shadowed by another
// entry of the name they show (X.rclonelink beside a file or folder X: the
// real X shows), and returns those apart.
func linkFiles(files []api.File) (shown, shadowed []api.File) {
	if !slices.ContainsFunc(files, isLinkFile) {
		return files, nil // no link: the listing as it is (no set of its names)
	}
	real := map[string]bool{}
	for _, f := range files {
		if !isLinkFile(f) {
			real[f.Name] = true
		}
	}
	if len(real) == len(files) {
		return files, nil // no link: the listing as it is
	}
	shown = make([]api.File, 0, len(files))
	for _, f := range files {
		if name, ok := linkBase(f.Name); ok && !f.IsDir() && real[name] {
			shadowed = append(shadowed, f)
			continue
		}
		shown = append(shown, f)
	}
	return shown, shadowed
}

// warnShadowed logs, once per link file, the links of this folder that
// an entry of their name hides.
func (n *dirNode) warnShadowed(files []api.File) {
	for _, f := range files {
		if _, warned := n.fsys.shadowed.LoadOrStore(f.ID, true); warned {
			continue
		}
		name, _ := linkBase(f.Name)
		path := n.Path(nil) + "/" + name
		n.fsys.log.WithFields(logrus.Fields{"path": path, "id": f.ID}).
			Warn("fs: the service holds both " + path + " and its link file " + f.Name + "; " + path + " shows, the link does not")
	}
}

// linkReserved says why name may not be made as a file, folder or new name
// of a rename here: with links on, a name ending in .rclonelink is a link's
// service name.
func (n *dirNode) linkReserved(name string) (syscall.Errno, string) {
	if _, ok := linkBase(name); ok && !n.fsys.opts.NoLinks {
		return syscall.EINVAL, "names ending in " + linkSuffix + " hold symbolic links on the service (ln -s makes one)"
	}
	return 0, ""
}

// linkMode shows a link's attributes: a symlink, 0777 as on Linux.
func linkMode(a *fuse.Attr) { a.Mode = syscall.S_IFLNK | 0o777 }

// Symlink makes a link: a pending link file holding the target, staged
// complete before anything sees it (Staging.CreateFrom).
func (n *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.fsys.opts.NoLinks {
		return nil, syscall.ENOTSUP
	}
	if !n.fsys.writable(n.dirKey().Area) {
		return nil, syscall.EROFS
	}
	if len(target) > maxLinkTarget {
		return nil, syscall.ENAMETOOLONG
	}
	if errno := n.checkNew(name); errno != 0 {
		return nil, errno
	}
	if len(name)+len(linkSuffix) > maxName {
		n.fsys.log.WithField("path", n.Path(nil)+"/"+name).Warn("refused the symbolic link: its service name (with " + linkSuffix + ") would be over 255 bytes")
		return nil, syscall.ENAMETOOLONG
	}
	if probeName(name) {
		return nil, syscall.ENOTSUP // desktop files are kept in memory (local.go), never links
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	if n.staged(name) != nil || n.fsys.local.special(n.dirKey(), name) != nil { // the staging first (load)
		return nil, syscall.EEXIST
	}
	v, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	if v.has(name) || v.hasRaw(name+linkSuffix) {
		return nil, syscall.EEXIST
	}
	t := n.target(name + linkSuffix)
	// Its maker as owner.
	st, err := n.fsys.store.CreateFilled(t, n.fsys.newAttr(ctx, 0o777, 0o777), func(f *os.File) error {
		_, err := f.WriteAt([]byte(target), 0)
		return err
	})
	if err != nil {
		return nil, Errno(n.fsys.log, "creating the link "+n.Path(nil)+"/"+name, err)
	}
	st.SetPath(n.Path(nil) + "/" + name)
	st.Touch()
	st.CloseWriter()
	ch := n.stagedChild(ctx, name, st)
	ch.Operations().(*fileNode).fillAttr(&out.Attr)
	return ch, 0
}

// pendingLink is the pending link of this folder named name, if any.
func (n *dirNode) pendingLink(name string) *writeback.Staged {
	if n.fsys.opts.NoLinks {
		return nil
	}
	return n.fsys.store.Staged(n.target(name + linkSuffix))
}

// hasRaw reports whether the listing holds an entry of service name raw,
// shown or not.
func (v *dirView) hasRaw(raw string) bool {
	for _, f := range v.listing.Files {
		if f.Name == raw {
			return true
		}
	}
	return false
}

// linkTarget is a link's target as last read, and the version it was read
// from.
type linkTarget struct {
	meta cache.Meta
	data []byte
}

// Readlink answers a link's target: a pending link's from its staging copy,
// a link on the service's from the node (read once per version), else from
// the content cache, fetched when not there.
func (n *fileNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	if !n.link {
		return nil, syscall.EINVAL
	}
	if st := n.acquirePending(); st != nil {
		defer st.CloseReader()
		b := make([]byte, min(st.Size(), maxLinkTarget+1))
		k, err := st.File().ReadAt(b, 0)
		return n.checkTarget(b[:k], err)
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	f, errno := n.current(ctx)
	if errno != 0 {
		return nil, errno
	}
	n.mu.Lock()
	known := n.linkTarget
	n.mu.Unlock()
	if known.data != nil && known.meta.Same(cache.MetaOf(f)) {
		return known.data, 0
	}
	b, err := n.fetchTarget(ctx, f)
	if err != nil && cache.Gone(err) {
		// Replaced by another writer since the listing: read the current one.
		if f, errno = n.relist(ctx, f); errno != 0 {
			return nil, errno
		}
		b, err = n.fetchTarget(ctx, f)
	}
	if err != nil {
		return nil, n.fsys.errno(ctx, "reading the link "+n.Path(nil), err)
	}
	if b, errno = n.checkTarget(b, nil); errno == 0 {
		n.mu.Lock()
		n.linkTarget = linkTarget{meta: cache.MetaOf(f), data: b}
		n.mu.Unlock()
	}
	return b, errno
}

// fetchTarget reads the content of link file f through the content cache.
func (n *fileNode) fetchTarget(ctx context.Context, f api.File) ([]byte, error) {
	if f.Size == 0 || f.Size > maxLinkTarget {
		return make([]byte, min(f.Size, maxLinkTarget+1)), nil // refused by checkTarget, unread
	}
	r, err := n.fsys.store.Fetcher.Open(cache.MetaOf(f))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := r.Ready(ctx, 0, f.Size); err != nil {
		if te := cache.AsTimeout(ctx, err); te != nil {
			return nil, te
		}
		return nil, err
	}
	b := make([]byte, f.Size)
	k, err := r.File().ReadAt(b, 0)
	if k == len(b) {
		err = nil
	}
	return b[:k], err
}

// checkTarget vets a target read from a link file: one empty, over 4095
// bytes or holding a NUL is no target a symlink can have (a file put there
// by hand): EIO, logged.
func (n *fileNode) checkTarget(b []byte, err error) ([]byte, syscall.Errno) {
	if err != nil && len(b) == 0 {
		return nil, Errno(n.fsys.log, "reading the link "+n.Path(nil), err)
	}
	if len(b) == 0 || len(b) > maxLinkTarget || bytes.IndexByte(b, 0) >= 0 {
		n.fsys.log.WithField("path", n.Path(nil)).WithField("bytes", len(b)).
			Warn("fs: the link file holds no link target (empty, over 4095 bytes, or with a NUL); readlink answers EIO")
		return nil, syscall.EIO
	}
	return b, 0
}

// replacedBy is the service file that a file (link false) or link moved or
// made at name of this folder overwrites on the service: the entry of the
// same kind shown there, or for a link one its name's real entry hides.
// 0: none.
func (n *dirNode) replacedBy(ctx context.Context, name string, link bool) int64 {
	f, ok := n.existing(ctx, name)
	if ok && !f.IsDir() && n.fsys.isLink(f) == link {
		return f.ID
	}
	if !link {
		return 0
	}
	v, errno := n.load(ctx)
	if errno != 0 {
		return 0
	}
	for _, x := range v.listing.Files {
		if x.Name == name+linkSuffix && !x.IsDir() {
			return x.ID
		}
	}
	return 0
}

// displace takes away what shows at name of this folder as the other kind
// than st, which now stands there (a link moved over a file, a file over a
// link): its service name is not st's, so st's upload does not replace it.
// A pending one is dropped; one on the service leaves the listing now and
// the service once st is uploaded (Store.Supersede).
func (n *dirNode) displace(ctx context.Context, name string, st *writeback.Staged) {
	if n.fsys.opts.NoLinks {
		return
	}
	link := n.fsys.isLinkStaged(st)
	other := name + linkSuffix
	if link {
		other = name
	}
	if o := n.fsys.store.Staged(n.target(other)); o != nil && o != st {
		if err := n.fsys.store.DropStaged(o); err != nil {
			n.fsys.log.WithError(err).WithField("path", n.Path(nil)+"/"+name).Warn("fs: could not drop the pending file a rename replaced")
		}
	}
	if f, ok := n.existing(ctx, name); ok && !f.IsDir() && n.fsys.isLink(f) != link {
		n.fsys.store.Supersede(n.dirKey(), f, st)
	}
}
