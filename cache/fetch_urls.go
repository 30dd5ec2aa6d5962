package cache

import (
	"context"
	"fmt"
	"time"
)

// The presigned URLs of the fetcher: one asked for per file while it is
// good, shared by every reader, renewed when the object store refuses it.

type urlEntry struct {
	url     string
	expires time.Time
}

// urlMargin is how long before its expiry a cached URL stops being used, and
// urlDefaultLife the life assumed when the service does not tell it.
const (
	urlMargin      = 2 * time.Minute
	urlDefaultLife = 30 * time.Minute
	urlTimeout     = time.Minute
)

// url returns a presigned URL of file id, from the cache while it is good.
// stale, when not empty, is a URL the object store refused: it is dropped and
// a new one asked for. The request is shared by every caller and runs on no
// caller's context, so one reader giving up does not fail the others.
func (f *Fetcher) url(ctx context.Context, id int64, stale string) (string, error) {
	if e, ok := f.urls.Get(id); ok {
		if e.url == stale {
			f.urls.Remove(id)
		} else if f.now().Add(urlMargin).Before(e.expires) {
			return e.url, nil
		}
	}
	ch := f.group.DoChan(fmt.Sprint(id), func() (any, error) {
		if e, ok := f.urls.Get(id); ok && e.url != stale && f.now().Add(urlMargin).Before(e.expires) {
			return e.url, nil
		}
		f.stats.urls.Add(1)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), urlTimeout)
		defer cancel()
		link, err := f.client.FileURL(rctx, id)
		if err != nil {
			return "", err
		}
		if link.URL == "" {
			return "", fmt.Errorf("cache: the service gave no URL for file %d", id)
		}
		exp := link.ExpiresAt
		if exp.IsZero() {
			exp = f.now().Add(urlDefaultLife)
		}
		f.urls.Add(id, urlEntry{link.URL, exp})
		return link.URL, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
