package relayhome

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUserStore(t *testing.T) {
	home := filepath.Join(t.TempDir(), "relay")
	created, err := EnsureHome(home)
	if err != nil || !created {
		t.Fatalf("EnsureHome = %v, %v", created, err)
	}
	st, err := os.Stat(UserFile(home))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config.json mode: %v %v", st, err)
	}
	u, err := LoadUser(home)
	if err != nil || u.Port != DefaultPort || len(u.Token) != len("relay_")+64 {
		t.Fatalf("LoadUser = %+v, %v", u, err)
	}
	again, err := EnsureHome(home)
	if err != nil || again {
		t.Fatalf("second EnsureHome = %v, %v", again, err)
	}
	u2, _ := LoadUser(home)
	if u2.Token != u.Token {
		t.Error("token changed on second EnsureHome")
	}
	if err := os.WriteFile(UserFile(home), []byte(`{"port": 70000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadUser(home); err == nil {
		t.Error("port 70000 accepted")
	}
}
