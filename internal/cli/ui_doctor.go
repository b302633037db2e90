package cli

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"strings"

	"github.com/relaydev/relay/internal/memory/server/ui"
)

// uiDoctorChecks: is the web UI served, and can `relay open` start a browser here?
func uiDoctorChecks() []doctorCheck {
	return []doctorCheck{
		{Name: "web UI", Run: checkWebUI},
		{Name: "browser", Run: checkBrowser},
	}
}

func checkWebUI(ctx context.Context, f *Factory) checkResult {
	embedded := fmt.Sprintf("embedded in the binary (%d files)", len(ui.Files()))
	c, err := memoryClient(f)
	if err != nil {
		return checkResult{Status: statusOK, Detail: embedded}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/ui/", nil)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	res, err := shortHTTP().Do(req)
	if err != nil {
		return checkResult{Status: statusOK, Detail: embedded + "; served at /ui/ once the daemon runs", Hint: "relay up"}
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("%s/ui/ answered %s (%s)", c.BaseURL, res.Status, res.Header.Get("Content-Type")),
			Hint: "is another program on that port? relay status"}
	}
	return checkResult{Status: statusOK, Detail: "served at " + c.BaseURL + "/ui/ (relay open)"}
}

func checkBrowser(ctx context.Context, f *Factory) checkResult {
	argv, err := browserCommand(runtime.GOOS, "URL", f.Getenv, exec.LookPath)
	if err != nil {
		return checkResult{Status: statusWarn, Detail: err.Error() + "; relay open prints the URL instead",
			Hint: "open the printed URL in any browser, or set $BROWSER"}
	}
	return checkResult{Status: statusOK, Detail: "relay open uses " + argv[0]}
}
