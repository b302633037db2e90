// Command zipbomb measures the memory daemon's peak RSS while it refuses zip
// bombs sent to POST /import: one bomb of -count entries of -size zero bytes
// each (80 x 50 MB = 4 GB in about 4 MB of zip), sent -concurrent times at
// once. It starts `relay up` from -relay on a temporary RELAY_HOME, so the
// same command measures any build:
//
//	go build -o /tmp/relay ./cmd/relay && go run ./bench/zipbomb -relay /tmp/relay
package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	relay := flag.String("relay", "relay", "relay binary to measure")
	count := flag.Int("count", 80, "entries in the bomb")
	size := flag.Int("size", 50<<20, "zero bytes per entry")
	concurrent := flag.Int("concurrent", 1, "imports sent at once")
	flag.Parse()
	if err := run(*relay, *count, *size, *concurrent); err != nil {
		fmt.Fprintln(os.Stderr, "zipbomb:", err)
		os.Exit(1)
	}
}

func run(relay string, count, size, concurrent int) error {
	bomb := build(count, size)
	home, err := os.MkdirTemp("", "relay-zipbomb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	env := append(os.Environ(), "RELAY_HOME="+home)
	up := exec.Command(relay, "up", "--port", strconv.Itoa(port))
	up.Env = env
	if out, err := up.CombinedOutput(); err != nil {
		return fmt.Errorf("relay up: %v: %s", err, out)
	}
	defer func() {
		down := exec.Command(relay, "down")
		down.Env = env
		_ = down.Run()
	}()
	var info struct {
		PID int    `json:"pid"`
		URL string `json:"url"`
	}
	b, err := os.ReadFile(filepath.Join(home, "daemon.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return err
	}
	var cfg struct {
		Token string `json:"token"`
	}
	if b, err := os.ReadFile(filepath.Join(home, "config.json")); err == nil {
		_ = json.Unmarshal(b, &cfg)
	}
	before := hwm(info.PID)
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]string, concurrent)
	for i := range concurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", info.URL+"/import", bytes.NewReader(bomb))
			req.Header.Set("Content-Type", "application/zip")
			if cfg.Token != "" {
				req.Header.Set("Authorization", "Bearer "+cfg.Token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses[i] = err.Error()
				return
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			resp.Body.Close()
			statuses[i] = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}()
	}
	wg.Wait()
	fmt.Printf("bomb: %d bytes of zip, %d entries x %d bytes = %d MB inflated; %d at once\n", len(bomb), count, size, int64(count)*int64(size)>>20, concurrent)
	for _, s := range statuses {
		fmt.Printf("response: %s\n", s)
	}
	fmt.Printf("daemon peak RSS (VmHWM): %d MB before, %d MB after (%.1f s)\n", before>>20, hwm(info.PID)>>20, time.Since(start).Seconds())
	return nil
}

// build makes a zip of count entries that each inflate to size zero bytes,
// plus a manifest listing them; the deflated entry is made once and reused.
func build(count, size int) []byte {
	var def bytes.Buffer
	fw, _ := flate.NewWriter(&def, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	h, c := sha256.New(), crc32.NewIEEE()
	for left := size; left > 0; left -= len(zeros) {
		chunk := zeros[:min(left, len(zeros))]
		fw.Write(chunk)
		h.Write(chunk)
		c.Write(chunk)
	}
	fw.Close()
	sum := hex.EncodeToString(h.Sum(nil))
	files, sizes := map[string]string{}, map[string]int{}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range count {
		name := fmt.Sprintf("artifacts/%026x", 0xb0b0000+i)
		w, _ := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: c.Sum32(),
			CompressedSize64: uint64(def.Len()), UncompressedSize64: uint64(size)})
		w.Write(def.Bytes())
		files[name], sizes[name] = sum, size
	}
	m, _ := json.Marshal(map[string]any{"format": "com.relay.bundle.v1", "thread_id": "b0b0b0b0-0000-4000-8000-000000000000", "files": files, "sizes": sizes})
	w, _ := zw.Create("manifest.json")
	w.Write(m)
	zw.Close()
	return buf.Bytes()
}

func hwm(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return -1
}
