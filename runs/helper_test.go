package runs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// helperArg, as the first argument of the test binary, makes it the helper
// program that the tests configure as the coding-agent command: no shell and
// no other binary is needed.
const helperArg = "runs-test-helper"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		os.Exit(helper(os.Args[2:]))
	}
	// A helper built with -race would sleep a second at exit otherwise.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	os.Exit(m.Run())
}

// envNames are the variables the env behaviour reports.
var envNames = []string{"GW_RUN_ID", "GW_RUN_REPO", "GW_RUN_WORK_ITEM", "GW_TENANT_ID", "GW_USER_ID",
	"PWD", "GATEWAY_TEST_SECRET", "RUNS_TEST_INHERITED"}

// helper is the helper program; args select its behaviour:
//
//	exit N        print a line to stdout and one to stderr, exit N
//	env           print {"cwd":..., "has_path":bool, "<name>":value...} of envNames
//	files         write files (one in a read-only directory) in the working
//	              directory, print it, exit 0
//	spam N        write N bytes (spamBytes(N)), exit 0
//	sleep         print "ready", sleep (SIGTERM kills it)
//	sleep-ms N    print "ready", sleep N ms, exit 0
//	ignore-term   ignore SIGTERM, print "ready", sleep (needs SIGKILL)
//	trap-term     print "ready", exit 0 on SIGTERM
//	grandchild    start "sleep" as a child in the same process group, print
//	              "child <pid>" and "ready", sleep
//	orphan        start "sleep" as a child, print "child <pid>", exit 0
//	tree          start "sleep" as a child in the same process group, print
//	              "leader <own pid>", "child <pid>" and "ready", sleep
//	mark FILE MS  append GW_RUN_ID and a newline to FILE, sleep MS ms, exit 0
//	gateway DB CMD...
//	              a gateway that crashes: see helperGateway
func helper(args []string) int {
	switch args[0] {
	case "exit":
		fmt.Println("out line")
		fmt.Fprintln(os.Stderr, "err line")
		n, _ := strconv.Atoi(args[1])
		return n
	case "env":
		wd, _ := os.Getwd()
		m := map[string]any{"cwd": wd, "has_path": os.Getenv("PATH") != ""}
		for _, k := range envNames {
			if v, ok := os.LookupEnv(k); ok {
				m[k] = v
			}
		}
		_ = json.NewEncoder(os.Stdout).Encode(m)
		return 0
	case "files":
		wd, _ := os.Getwd()
		ro := filepath.Join(wd, "ro")
		if err := os.WriteFile(filepath.Join(wd, "work.txt"), []byte("x"), 0o644); err != nil {
			return 10
		}
		if err := os.Mkdir(ro, 0o755); err != nil {
			return 11
		}
		if err := os.WriteFile(filepath.Join(ro, "locked.txt"), []byte("x"), 0o444); err != nil {
			return 12
		}
		if err := os.Chmod(ro, 0o555); err != nil {
			return 13
		}
		fmt.Println(wd)
		return 0
	case "spam":
		n, _ := strconv.Atoi(args[1])
		_, _ = os.Stdout.Write(spamBytes(n))
		return 0
	case "sleep":
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "sleep-ms":
		fmt.Println("ready")
		n, _ := strconv.Atoi(args[1])
		time.Sleep(time.Duration(n) * time.Millisecond)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "trap-term":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		fmt.Println("got SIGTERM")
		return 0
	case "tree":
		exe, _ := os.Executable()
		child := exec.Command(exe, helperArg, "sleep")
		if err := child.Start(); err != nil {
			return 20
		}
		fmt.Printf("leader %d\nchild %d\nready\n", os.Getpid(), child.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	case "mark":
		f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return 40
		}
		_, err = f.WriteString(os.Getenv("GW_RUN_ID") + "\n") // one write: O_APPEND keeps lines whole
		if f.Close() != nil || err != nil {
			return 41
		}
		n, _ := strconv.Atoi(args[2])
		time.Sleep(time.Duration(n) * time.Millisecond)
		return 0
	case "gateway":
		return helperGateway(args[1], args[2:])
	case "grandchild", "orphan":
		exe, _ := os.Executable()
		child := exec.Command(exe, helperArg, "sleep")
		if err := child.Start(); err != nil {
			return 20
		}
		fmt.Printf("child %d\n", child.Process.Pid)
		if args[0] == "orphan" {
			return 0
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper behaviour %q\n", args[0])
	return 99
}

// spamBytes is what "spam n" writes: n bytes of lower-case letters, a newline
// every 64th byte.
func spamBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
		if i%64 == 63 {
			b[i] = '\n'
		}
	}
	return b
}
