package txn

import (
	"fmt"

	"github.com/relaydev/relay/internal/apply/patch"
)

// NotThisProjectError is an answer without a control block that does not
// clearly edit this project: a file it changes does not exist and its format
// does not say the file is new.
type NotThisProjectError struct {
	Path string
}

func (e *NotThisProjectError) Error() string {
	return fmt.Sprintf("%s does not exist in this project and the answer does not say it is a new file", e.Path)
}

// CheckTargets tells whether a bare answer (no control block, so no projectId)
// is unambiguously an edit to the project in dir: every file it edits,
// deletes or renames exists, unless its format says the file is new (a diff
// from /dev/null, a codex Add File, a str_replace_editor create). relay watch
// applies nothing else: copied code alone never writes a file.
func CheckTargets(dir string, resp *patch.Response) error {
	proj, err := openProject(dir)
	if err != nil {
		return err
	}
	defer proj.close()
	made := map[string]bool{} // paths an earlier operation of the answer creates
	exists := func(raw string) (bool, string, error) {
		name, err := CleanPath(raw)
		if err != nil {
			return false, raw, err
		}
		if made[name] {
			return true, name, nil
		}
		if _, err := proj.check(name); err != nil {
			return false, name, err
		}
		f, err := proj.read(name)
		if err != nil {
			return false, name, err
		}
		return f.exists, name, nil
	}
	for _, op := range resp.Operations {
		switch op.Kind {
		case patch.OpRename:
			ok, name, err := exists(op.From)
			if err != nil {
				return err
			}
			if !ok {
				return &NotThisProjectError{Path: name}
			}
			to, _ := CleanPath(op.To)
			made[to] = true
		default:
			ok, name, err := exists(op.Path)
			if err != nil {
				return err
			}
			if !ok && !(op.Kind == patch.OpWrite && op.Create) {
				return &NotThisProjectError{Path: name}
			}
			made[name] = op.Kind == patch.OpWrite
		}
	}
	return nil
}
