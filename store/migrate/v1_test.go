package migrate

import (
	"testing"

	"github.com/realsync/realsync/store/internal/layout"
)

// The steps lead from schema 1 to PlainSchema, one schema at a time
// (SchemaVersion differs from it by new deployments' tags alone).
func TestMigrationStepsChain(t *testing.T) {
	for i, st := range steps {
		if st.from != 1+i || st.run == nil || st.what == "" {
			t.Errorf("step %d: from %d, want %d, with a run and a description", i, st.from, 1+i)
		}
	}
	if got := 1 + len(steps); got != layout.PlainSchema || layout.SchemaVersion != layout.PlainSchema+1 {
		t.Errorf("the steps end at schema %d, want PlainSchema %d (SchemaVersion %d)", got, layout.PlainSchema, layout.SchemaVersion)
	}
}

func TestPlayerRecordV2(t *testing.T) {
	const created = 1_795_000_000_000 // the room's createdAt, epoch ms
	tests := []struct {
		name, rec, want string
		changed, bad    bool
	}{
		{"JSON", `{"playerId":2,"name":"bob","joinedAt":"2026-11-18T11:06:41.5Z"}`, `1500|"bob"`, true, false},
		{"JSONEscapedName", `{"playerId":2,"name":"a \"b\"","joinedAt":"2026-11-18T11:06:41Z"}`, `1000|"a \"b\""`, true, false},
		{"EpochMs", `1795000002000|"carol"`, `2000|"carol"`, true, false},
		{"EpochMsBeforeCreation", `1794999999999|"owner"`, `0|"owner"`, true, false}, // createdAt µs bumped for uniqueness
		{"AlreadyOffset", `2000|"carol"`, `2000|"carol"`, false, false},
		{"Garbage", `x|"carol"`, "", false, true},
		{"BadJSON", `{"name":`, "", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := playerRecordV2(tc.rec, created)
			if (err != nil) != tc.bad || got != tc.want || changed != tc.changed {
				t.Errorf("playerRecordV2(%q) = %q, %v, %v; want %q, %v, error %v", tc.rec, got, changed, err, tc.want, tc.changed, tc.bad)
			}
		})
	}
}
