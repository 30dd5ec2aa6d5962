package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Sign computes the request signature of the service: the lowercase hex
// HMAC-SHA256, keyed with secret, of key + METHOD + path + timestamp + nonce + body,
// concatenated without separators. path starts with /organization-management/v1 and
// carries no query string; timestamp is milliseconds since the epoch in decimal.
func Sign(key, secret, method, path, timestamp, nonce string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(key))
	m.Write([]byte(strings.ToUpper(method)))
	m.Write([]byte(path))
	m.Write([]byte(timestamp))
	m.Write([]byte(nonce))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// AuthorizationHeader builds the Authorization header value
// "HMAC {key}:{signature}:{nonce}:{timestamp}".
func AuthorizationHeader(key, secret, method, path, timestamp, nonce string, body []byte) string {
	return "HMAC " + key + ":" + Sign(key, secret, method, path, timestamp, nonce, body) + ":" + nonce + ":" + timestamp
}

// ParsedAuthorization is the four parts of an Authorization header.
type ParsedAuthorization struct {
	Key, Signature, Nonce, Timestamp string
}

// ParseAuthorization splits an "HMAC key:signature:nonce:timestamp" header value.
// It reports false when the value is not of that form.
func ParseAuthorization(v string) (ParsedAuthorization, bool) {
	rest, ok := strings.CutPrefix(v, "HMAC ")
	if !ok {
		return ParsedAuthorization{}, false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 4 {
		return ParsedAuthorization{}, false
	}
	for _, p := range parts {
		if p == "" {
			return ParsedAuthorization{}, false
		}
	}
	if _, err := strconv.ParseInt(parts[3], 10, 64); err != nil {
		return ParsedAuthorization{}, false
	}
	return ParsedAuthorization{Key: parts[0], Signature: parts[1], Nonce: parts[2], Timestamp: parts[3]}, true
}
