package api

import "testing"

// The known-answer vectors of the service's public reference (service-notes.md).
func TestSignKnownAnswer(t *testing.T) {
	tests := []struct {
		name, method, path, nonce, body, want string
	}{
		{
			name: "post with body", method: "POST", path: "/organization-management/v1/files",
			nonce: "0f8fad5b-d9cb-469f-a165-70867728950e",
			body:  `{"file_name":"a.txt","object_type":"file"}`,
			want:  "HMAC demo-key-a:1867096202b8723d70e4b142a17cfb62a281110962f5a15d4cf4e2babb97afe3:0f8fad5b-d9cb-469f-a165-70867728950e:1763778000000",
		},
		{
			name: "get without body", method: "GET", path: "/organization-management/v1/files",
			nonce: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
			want:  "HMAC demo-key-a:abac77ded3e48b5476a01677ff53ba5cc350addf520bef5cbe4132231c3931a7:7c9e6679-7425-40de-944b-e07fc1f90ae7:1763778000000",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuthorizationHeader("demo-key-a", "demo-secret-a", tt.method, tt.path, "1763778000000", tt.nonce, []byte(tt.body))
			if got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			p, ok := ParseAuthorization(got)
			if !ok || p.Key != "demo-key-a" || p.Nonce != tt.nonce || p.Timestamp != "1763778000000" {
				t.Fatalf("parse %q: %+v %v", got, p, ok)
			}
		})
	}
}

func TestParseAuthorizationRejects(t *testing.T) {
	for _, v := range []string{"", "Bearer x", "HMAC a:b:c", "HMAC a:b:c:notanumber", "HMAC :b:c:1", "HMAC a:b:c:1:2"} {
		if _, ok := ParseAuthorization(v); ok {
			t.Errorf("ParseAuthorization(%q) accepted", v)
		}
	}
}
