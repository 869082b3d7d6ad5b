package rooms

import "testing"

func TestMessageVisibleTo(t *testing.T) {
	cases := []struct {
		name string
		m    Message
		pid  int
		want bool
	}{
		{"broadcast", Message{From: 1}, 3, true},
		{"recipient", Message{From: 1, To: []int{2, 3}}, 3, true},
		{"sender", Message{From: 1, To: []int{2}}, 1, true},
		{"bystander", Message{From: 1, To: []int{2}}, 3, false},
	}
	for _, c := range cases {
		if got := c.m.VisibleTo(c.pid); got != c.want {
			t.Errorf("%s: VisibleTo(%d) = %v, want %v", c.name, c.pid, got, c.want)
		}
	}
}
