package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

func init() {
	scriptCmds["pgdb"] = cmdPGDB
	scriptCmds["s3bucket"] = cmdS3Bucket
	scriptCmds["s3orphan"] = cmdS3Orphan
}

// cmdPGDB creates an empty database on the test PostgreSQL server and puts its URL in the
// environment variable VAR: pgdb VAR [PASSWORD]. With PASSWORD the URL carries it (the
// server trusts local connections, so it is only there to prove relay never prints it).
func cmdPGDB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: pgdb VAR [PASSWORD]")
	}
	url, notInstalled, err := pgtest.NewDB()
	ts.Check(notInstalled) // scripts guard with [!postgres] skip
	ts.Check(err)
	if len(args) == 2 {
		url = "postgres://relay:" + args[1] + "@" + url[len("postgres://relay@"):]
	}
	ts.Setenv(args[0], url)
}

// scriptCondition adds [postgres] (PostgreSQL is installed) and [versitygw] to the
// standard testscript conditions.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "postgres":
		_, err := pgtest.Bin()
		return err == nil || os.Getenv("RELAY_TEST_POSTGRES") != "", nil
	case "versitygw":
		_, err := s3test.Binary()
		return err == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

var bucketSeq atomic.Int64

// cmdS3Bucket starts versitygw for the script, creates a bucket and puts its artifacts
// location in VAR, with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set for relay:
// s3bucket VAR. The script is skipped when versitygw is not installed.
func cmdS3Bucket(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: s3bucket VAR")
	}
	bin, err := s3test.Binary()
	ts.Check(err) // scripts guard with [!versitygw] skip
	dir := ts.MkAbs(".s3")
	ts.Check(os.MkdirAll(dir, 0o700))
	srv, stop, err := s3test.StartIn(bin, dir)
	ts.Check(err)
	ts.Defer(stop)
	loc, err := srv.MakeBucket(fmt.Sprintf("relay-%d", bucketSeq.Add(1)), "team")
	ts.Check(err)
	ts.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	ts.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	ts.Setenv(args[0], loc)
}

// cmdS3Orphan puts FILE's bytes into the bucket at LOCATION as a body no artifact
// references, the way a put that crashed before its commit leaves one: s3orphan LOCATION FILE.
func cmdS3Orphan(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: s3orphan LOCATION FILE")
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		os.Setenv(k, ts.Getenv(k)) // the blob store reads its credentials from the environment
	}
	bs, err := blob.Open(context.Background(), args[0])
	ts.Check(err)
	b, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	_, err = bs.Put(context.Background(), blob.Sum(b), int64(len(b)), bytes.NewReader(b))
	ts.Check(err)
}
