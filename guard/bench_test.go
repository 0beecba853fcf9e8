package guard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatgw/gateway/guard"
)

// benchProse is ordinary prompt text: a report to summarise, with numbers,
// dates, hyphens and punctuation, and nothing the rules flag.
const benchProse = `Please summarise the following quarterly report for the board, in five bullet points, and flag anything that needs a decision before the end of the month.

Q3 results. Revenue reached 4.2 million euros, up 12% on the same quarter last year, driven by the self-service tier and two large renewals in the public sector. Gross margin held at 71%; the increase in hosting costs (about 180,000 euros) was offset by the move of the batch workloads to reserved instances on 14 August. Operating expenses grew 6%, mostly headcount: three engineers joined the platform team and one account manager joined sales in the Nordics.

Customers. We closed 41 new accounts and lost 9, a net retention of 108%. The churned accounts were small; exit interviews name pricing (4), missing single sign-on (3) and a competitor's bundled offer (2). Support tickets fell from 2,310 to 1,975 after the July release, and the median first response time is now 38 minutes. The long-running escalation with the logistics customer was resolved on 2 September with a service credit of 15,000 euros.

Product. The July release shipped usage-based billing, audit-log export and the new onboarding flow; adoption of the export feature is at 23% of eligible tenants after six weeks. The September release slipped by nine days because of a regression in the search indexer, found in the pre-release load test and fixed before any customer saw it. Next quarter the team plans role-based access for shared dashboards, a read-only API for finance tools, and the retirement of the legacy reporting module, which still serves about 140 tenants.

Risks. Two contracts worth 600,000 euros a year come up for renewal in November; both customers have asked for data residency in Germany, which our current hosting region does not offer. The security review of the third-party payment widget is not finished; until it is, the widget stays behind a feature flag. Hiring for the data-protection officer role has taken longer than planned, and the interim arrangement with outside counsel costs roughly 9,000 euros a month.

Decisions needed: approve the budget for a second hosting region (estimate: 45,000 euros set-up, 11,000 a month), choose between the two candidates for the head of customer success, and confirm the price change for the self-service tier planned for 1 January.
`

func benchPrompt(size int) string {
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(benchProse)
	}
	return b.String()[:size]
}

// BenchmarkRules classifies a 32 KB prompt with testdata/rules.json (5
// categories, 51 terms, 5 patterns). Target: under 100 µs per call.
func BenchmarkRules(b *testing.B) {
	r, err := guard.LoadRules("testdata/rules.json")
	if err != nil {
		b.Fatal(err)
	}
	clean := benchPrompt(32 << 10)
	cases := []struct {
		name, text string
		flagged    string
	}{
		{"clean", clean, ""},
		// Non-ASCII text takes the normalisation path (NFKC, folding).
		{"clean-non-ascii", "Résumé, s'il vous plaît: " + clean[:len(clean)-30], ""},
		// Literals a pattern needs ("life", "make") are in the text, so
		// the pattern runs on the stretches that hold them.
		{"pattern-literals", strings.Repeat("how to make a life plan, ", 40) + clean[:len(clean)-1000], ""},
		{"flagged-at-end", clean[:len(clean)-40] + " and then I want to kill myself.", "self-harm"},
	}
	for _, c := range cases {
		in := guard.Input{Texts: []string{c.text}}
		v, err := r.Classify(context.Background(), in)
		if err != nil || v.Param() != c.flagged {
			b.Fatalf("%s: Classify = %q, %v; want %q", c.name, v.Param(), err, c.flagged)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Classify(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
