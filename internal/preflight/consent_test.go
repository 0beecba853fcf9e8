package preflight_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

func TestCloudConsent(t *testing.T) {
	docA, docB := "alpha", "beta"
	hashA, hashB := preflight.DocumentHash(docA), preflight.DocumentHash(docB)
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"summarise"}],"attachments":[` +
			`{"kind":"document","doc_name":"a.txt","content":"` + docA + `"},` +
			`{"kind":"document","doc_name":"b.txt","content":"` + docB + `","content_hash":"` + strings.ToUpper(hashB) + `"}]}`)
	}
	consentTenant := &auth.Tenant{ID: "acme", Settings: auth.Settings{CloudDocConsent: true}}
	clk := clock.NewFake(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))

	type step struct {
		name     string
		tenant   *auth.Tenant
		model    string
		header   string
		want     errcat.Code
		required []map[string]string
	}
	steps := []step{
		{name: "tenant without the setting", tenant: &auth.Tenant{ID: "acme"}, model: "lm-4-scout"},
		{name: "local-only model", tenant: consentTenant, model: "lm-4-scout-local"},
		{name: "no consent", tenant: consentTenant, model: "lm-4-scout", want: errcat.CloudConsentRequired,
			required: []map[string]string{{"content_hash": hashA, "doc_name": "a.txt"}, {"content_hash": hashB, "doc_name": "b.txt"}}},
		{name: "one consent", tenant: consentTenant, model: "lm-4-scout", header: hashA, want: errcat.CloudConsentRequired,
			required: []map[string]string{{"content_hash": hashB, "doc_name": "b.txt"}}},
		{name: "both, one persisted", tenant: consentTenant, model: "lm-4-scout", header: " " + hashA + " , " + hashB + ";persist"},
		{name: "persisted grant suffices", tenant: consentTenant, model: "lm-4-scout", header: hashA},
		{name: "grant is per tenant", tenant: &auth.Tenant{ID: "other", Settings: auth.Settings{CloudDocConsent: true}}, model: "lm-4-scout",
			header: hashA, want: errcat.CloudConsentRequired, required: []map[string]string{{"content_hash": hashB, "doc_name": "b.txt"}}},
	}
	st := memstore.New()
	consents := preflight.NewStoreConsents(st, clk)
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			_, err := check(t, preflight.Request{Body: body(s.model), Tenant: s.tenant, CloudConsent: s.header, Consents: consents})
			if got := errOf(err).Code; got != s.want {
				t.Fatalf("Check() code = %q, want %q (%v)", got, s.want, err)
			}
			if s.want == "" {
				return
			}
			e := errcat.As(err)
			if e.Param != "attachments" || errcat.Status(e) != 409 {
				t.Errorf("param %q status %d, want attachments 409", e.Param, errcat.Status(e))
			}
			// Compare the wire shape of required_consents.
			var got []map[string]string
			roundTrip(t, e.Extra["required_consents"], &got)
			if diff := cmp.Diff(s.required, got); diff != "" {
				t.Errorf("required_consents mismatch (-want +got):\n%s", diff)
			}
		})
	}
	ok, err := consents.Granted(context.Background(), "acme", strings.ToUpper(hashB))
	if err != nil || !ok {
		t.Errorf("Granted(acme, hashB) = %v, %v; want true", ok, err)
	}
	var stored string
	st.View(context.Background(), func(tx store.Tx) error {
		stored = string(tx.Get([]byte("consent/grants"), []byte("acme\x00"+hashB)))
		return nil
	})
	if stored != `{"granted_at":"2025-01-02T03:04:05Z"}` {
		t.Errorf("stored grant = %s", stored)
	}
	ok, _ = consents.Granted(context.Background(), "acme", hashA)
	if ok {
		t.Errorf("Granted(acme, hashA) = true; only ;persist entries are stored")
	}
}

func TestCloudConsentUnconfiguredCloud(t *testing.T) {
	cat := testCatalog()
	m := cat.Lookup("lm-4-scout")
	for i := range m.Backends {
		if m.Backends[i].Provider != "local" {
			m.Backends[i].Status = upstream.StatusUnconfigured
		}
	}
	tenant := &auth.Tenant{ID: "acme", Settings: auth.Settings{CloudDocConsent: true}}
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}],"attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`
	if _, err := check(t, preflight.Request{Body: []byte(body), Tenant: tenant, Catalog: cat}); err != nil {
		t.Errorf("Check() = %v; a chain whose cloud backends are unconfigured needs no consent", err)
	}
}

func TestCloudConsentStoreFailure(t *testing.T) {
	tenant := &auth.Tenant{ID: "acme", Settings: auth.Settings{CloudDocConsent: true}}
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}],"attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`
	st := memstore.New()
	st.FailNext(errors.New("disk on fire"))
	consents := preflight.NewStoreConsents(st, nil)
	_, err := check(t, preflight.Request{Body: []byte(body), Tenant: tenant, Consents: consents})
	if diff := cmp.Diff(errWant{errcat.StorageError, "", 500}, errOf(err)); diff != "" {
		t.Errorf("Check() error mismatch (-want +got):\n%s", diff)
	}
}

// TestCloudConsentHeader: CloudConsent reads what Header.Values would, under
// the canonical key, every value in one list.
func TestCloudConsentHeader(t *testing.T) {
	if got := http.CanonicalHeaderKey(preflight.HeaderCloudConsent); got != "Gw-Cloud-Consent" {
		t.Fatalf("canonical key = %q", got)
	}
	for _, vals := range [][]string{nil, {"abc"}, {"abc;persist", "def"}} {
		h := http.Header{}
		for _, v := range vals {
			h.Add(preflight.HeaderCloudConsent, v)
		}
		if got, want := preflight.CloudConsent(h), strings.Join(h.Values(preflight.HeaderCloudConsent), ","); got != want {
			t.Errorf("CloudConsent(%q) = %q, want %q", vals, got, want)
		}
	}
}
