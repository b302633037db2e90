package clipboard

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// watchX11 reports every change of the X11 CLIPBOARD selection owner through
// the XFixes extension, so relay watch need not poll xclip on X11. It speaks
// just enough of the X protocol for that: connect, authenticate, intern the
// CLIPBOARD atom and select XFixesSetSelectionOwnerNotify on the root window.
func watchX11(ctx context.Context, display string, changed func()) error {
	conn, err := dialX11(display)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	x := &xconn{c: conn, r: bufio.NewReader(conn)}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := x.setup(display); err != nil {
		return err
	}
	clip, err := x.internAtom("CLIPBOARD")
	if err != nil {
		return err
	}
	major, firstEvent, err := x.queryExtension("XFIXES")
	if err != nil {
		return err
	}
	// XFixesQueryVersion must come first; then XFixesSelectSelectionInput with
	// SetSelectionOwner|SelectionWindowDestroy|SelectionClientClose.
	if _, err := x.request(major, 0, u32(5), u32(0)); err != nil {
		return fmt.Errorf("XFixes version: %w", err)
	}
	if err := x.send(major, 2, u32(x.root), u32(clip), u32(7)); err != nil {
		return err
	}
	_ = conn.SetDeadline(time.Time{})
	// A copy made between the caller's first read and this subscription has no event: look once.
	changed()
	for {
		ev, err := x.packet()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("X11 connection: %w", err)
		}
		if ev[0] == 0 {
			return fmt.Errorf("X11 error code %d", ev[1])
		}
		if ev[0]&0x7f == firstEvent {
			changed()
		}
	}
}

type xconn struct {
	c    net.Conn
	r    *bufio.Reader
	root uint32
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func pad4(n int) int { return (4 - n%4) % 4 }

// send writes one request: opcode, a data byte, then the body.
func (x *xconn) send(op, data byte, parts ...[]byte) error {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	body = append(body, make([]byte, pad4(len(body)))...)
	req := []byte{op, data}
	req = binary.LittleEndian.AppendUint16(req, uint16(1+len(body)/4))
	_, err := x.c.Write(append(req, body...))
	return err
}

// request sends a request and returns its reply.
func (x *xconn) request(op, data byte, parts ...[]byte) ([]byte, error) {
	if err := x.send(op, data, parts...); err != nil {
		return nil, err
	}
	for {
		p, err := x.packet()
		if err != nil {
			return nil, err
		}
		switch p[0] {
		case 0:
			return nil, fmt.Errorf("X11 error code %d for request %d", p[1], op)
		case 1:
			return p, nil
		}
	}
}

// packet reads one reply, error or event (32 bytes plus a reply's extra data).
func (x *xconn) packet() ([]byte, error) {
	p := make([]byte, 32)
	if _, err := io.ReadFull(x.r, p); err != nil {
		return nil, err
	}
	if p[0] == 1 {
		if extra := binary.LittleEndian.Uint32(p[4:]); extra > 0 {
			if extra > 1<<20 {
				return nil, errors.New("X11 reply too large")
			}
			more := make([]byte, 4*int(extra))
			if _, err := io.ReadFull(x.r, more); err != nil {
				return nil, err
			}
			p = append(p, more...)
		}
	}
	return p, nil
}

func (x *xconn) internAtom(name string) (uint32, error) {
	rep, err := x.request(16, 0, binary.LittleEndian.AppendUint16(nil, uint16(len(name))), []byte{0, 0}, []byte(name))
	if err != nil {
		return 0, fmt.Errorf("intern atom %s: %w", name, err)
	}
	return binary.LittleEndian.Uint32(rep[8:]), nil
}

func (x *xconn) queryExtension(name string) (major, firstEvent byte, err error) {
	rep, err := x.request(98, 0, binary.LittleEndian.AppendUint16(nil, uint16(len(name))), []byte{0, 0}, []byte(name))
	if err != nil {
		return 0, 0, err
	}
	if rep[8] == 0 {
		return 0, 0, fmt.Errorf("the X server has no %s extension", name)
	}
	return rep[9], rep[10], nil
}

// setup performs the connection handshake and finds screen 0's root window.
func (x *xconn) setup(display string) error {
	authName, authData := xauth(display)
	req := []byte{'l', 0, 11, 0, 0, 0}
	req = binary.LittleEndian.AppendUint16(req, uint16(len(authName)))
	req = binary.LittleEndian.AppendUint16(req, uint16(len(authData)))
	req = append(req, 0, 0)
	req = append(req, authName...)
	req = append(req, make([]byte, pad4(len(authName)))...)
	req = append(req, authData...)
	req = append(req, make([]byte, pad4(len(authData)))...)
	if _, err := x.c.Write(req); err != nil {
		return err
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(x.r, head); err != nil {
		return fmt.Errorf("X11 handshake: %w", err)
	}
	data := make([]byte, 4*int(binary.LittleEndian.Uint16(head[6:])))
	if _, err := io.ReadFull(x.r, data); err != nil {
		return fmt.Errorf("X11 handshake: %w", err)
	}
	if head[0] != 1 {
		reason := data
		if n := int(head[1]); n <= len(reason) {
			reason = reason[:n]
		}
		return fmt.Errorf("X11 server refused the connection: %s", strings.TrimSpace(string(reason)))
	}
	if len(data) < 32 {
		return errors.New("X11 handshake: short setup reply")
	}
	vendor := int(binary.LittleEndian.Uint16(data[16:]))
	formats := int(data[21])
	off := 32 + vendor + pad4(vendor) + 8*formats
	if data[20] == 0 || off+4 > len(data) {
		return errors.New("X11 handshake: no screen")
	}
	x.root = binary.LittleEndian.Uint32(data[off:])
	return nil
}

// parseDisplay splits DISPLAY ("[host]:n[.s]") into host and display number.
func parseDisplay(display string) (host, num string, err error) {
	i := strings.LastIndex(display, ":")
	if i < 0 {
		return "", "", fmt.Errorf("DISPLAY %q is not [host]:number", display)
	}
	host, num = display[:i], display[i+1:]
	if dot := strings.IndexByte(num, '.'); dot >= 0 {
		num = num[:dot]
	}
	if _, err := strconv.Atoi(num); err != nil {
		return "", "", fmt.Errorf("DISPLAY %q is not [host]:number", display)
	}
	return host, num, nil
}

func dialX11(display string) (net.Conn, error) {
	host, num, err := parseDisplay(display)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	if host == "" || host == "unix" || strings.HasPrefix(host, "/") {
		sock := "/tmp/.X11-unix/X" + num
		if strings.HasPrefix(host, "/") {
			sock = display[:strings.LastIndex(display, ":")] // launchd-style socket path
		}
		c, err := d.Dial("unix", sock)
		if err == nil {
			return c, nil
		}
		if c, err2 := d.Dial("unix", "@"+sock); err2 == nil { // Linux abstract socket
			return c, nil
		}
		return nil, fmt.Errorf("connect to X display %s: %w", display, err)
	}
	n, _ := strconv.Atoi(num)
	return d.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(6000+n)))
}

// xauth finds the MIT-MAGIC-COOKIE-1 for display in $XAUTHORITY or
// ~/.Xauthority; none means connecting without authentication.
func xauth(display string) (name, data []byte) {
	file := os.Getenv("XAUTHORITY")
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		file = filepath.Join(home, ".Xauthority")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil
	}
	_, num, _ := parseDisplay(display)
	hostname, _ := os.Hostname()
	read := func() ([]byte, bool) {
		if len(b) < 2 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return nil, false
		}
		v := b[2 : 2+n]
		b = b[2+n:]
		return v, true
	}
	for len(b) >= 2 {
		family := binary.BigEndian.Uint16(b)
		b = b[2:]
		addr, ok1 := read()
		dnum, ok2 := read()
		aname, ok3 := read()
		adata, ok4 := read()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, nil
		}
		local := family == 256 && string(addr) == hostname || family == 65535
		if local && (len(dnum) == 0 || string(dnum) == num) && string(aname) == "MIT-MAGIC-COOKIE-1" {
			return aname, adata
		}
	}
	return nil, nil
}
