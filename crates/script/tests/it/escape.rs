//! Sandbox escapes, each a test: every one must fail inside a runner.

use script::{ExecStatus, Limits};

use crate::{run_once, text};

/// Runs `attempt` (Python that prints `ESCAPED` if it got out) and returns what it printed.
async fn attempt(code: &str) -> String {
    let (result, _, _) = run_once(code, Limits::default()).await;
    assert_eq!(result.status, ExecStatus::Ok, "{result:?}");
    let out = text(&result);
    assert!(!out.contains("ESCAPED"), "{out}");
    out
}

fn guarded(body: &str) -> String {
    let body = body.replace('\n', "\n    ");
    format!(
        "try:\n    {body}\n    print('ESCAPED')\nexcept Exception as e:\n    print('refused', type(e).__name__, e)"
    )
}

#[tokio::test]
async fn no_tcp_or_udp_socket_reaches_anything() {
    let out = attempt(&guarded("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(('127.0.0.1', 22))")).await;
    assert!(out.contains("refused"), "{out}");
    let out = attempt(&guarded("import socket\ns = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\ns.sendto(b'x', ('::1', 53))")).await;
    assert!(out.contains("refused"), "{out}");
    let out = attempt(&guarded("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('127.0.0.1', 53))")).await;
    assert!(out.contains("refused"), "{out}");
}

#[tokio::test]
async fn host_files_are_not_there() {
    // /etc/shadow, the home directory, the system's temporary directory (where data directories
    // and the SDK's host copy live) and /root are simply absent.
    for path in [
        "/etc/shadow",
        "/etc/passwd",
        "/root",
        "/home",
        "/var",
        "/proc/1/root/etc/shadow",
    ] {
        let out = attempt(&guarded(&format!("print(open('{path}').read()[:50])"))).await;
        assert!(out.contains("refused"), "{path}: {out}");
    }
    let host_tmp = std::env::temp_dir();
    let out = attempt(&format!(
        "import os\nprint(sorted(os.listdir('/tmp')), os.path.exists('{}/glovebox'))",
        host_tmp.display()
    ))
    .await;
    assert!(out.starts_with("[] False"), "{out}");
    let out = attempt("import os\nprint(sorted(os.listdir('/')))").await;
    assert!(
        !out.contains("'etc'") && !out.contains("'root'") && !out.contains("'home'"),
        "{out}"
    );
}

#[tokio::test]
async fn the_data_dir_and_the_person_token_are_out_of_reach() {
    // The host's environment (where a token could be) is not inherited, and no path of the
    // caller's data directory exists inside.
    let dir = std::env::temp_dir().join("glovebox-escape-data");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("person-token"), "secret-token-value").unwrap();
    let out = attempt(&format!(
        "import os\nprint(sorted(os.environ))\nprint(os.path.exists('{}'))",
        dir.display()
    ))
    .await;
    assert!(out.contains("False"), "{out}");
    assert!(!out.contains("GLOVEBOX"), "{out}");
    assert!(!out.contains("secret-token-value"));
    let out = attempt(&guarded(&format!(
        "open('{}/person-token').read()",
        dir.display()
    )))
    .await;
    assert!(out.contains("refused"), "{out}");
}

#[tokio::test]
async fn writes_outside_scratch_fail_and_scratch_is_private_to_its_runner() {
    // `os.write`, not a buffered file: its error cannot be lost at close.
    for path in [
        "/x",
        "/usr/lib/evil",
        "/sdk/glovebox.py",
        "/proc/sys/kernel/hostname",
        "/dev/shm/x",
        "/dev/x",
    ] {
        let out = attempt(&guarded(&format!(
            "import os\nfd = os.open('{path}', os.O_WRONLY | os.O_CREAT)\nos.write(fd, b'x')"
        )))
        .await;
        assert!(out.contains("refused"), "{path}: {out}");
    }
    let (first, _, _) = run_once(
        "open('/scratch/mine', 'w').write('one session')\nimport os\nprint(os.listdir('/scratch'))",
        Limits::default(),
    )
    .await;
    assert_eq!(text(&first).trim(), "['mine']");
    // Another runner (another session) sees an empty scratch.
    let out = attempt("import os\nprint(os.listdir('/scratch'), os.getuid())").await;
    assert_eq!(out.trim(), "[] 65534");
}

#[tokio::test]
async fn no_process_can_be_started_so_none_outlives_the_call() {
    let out = attempt(&guarded(
        "import os\npid = os.fork()\nif pid == 0:\n    import time\n    time.sleep(600)",
    ))
    .await;
    assert!(out.contains("refused"), "{out}");
    let out = attempt(&guarded("import subprocess\nsubprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(600)'])")).await;
    assert!(out.contains("refused"), "{out}");
    let out = attempt(&guarded(
        "import os\nos.posix_spawn('/usr/bin/python3', ['python3', '-c', 'pass'], {})",
    ))
    .await;
    assert!(out.contains("refused"), "{out}");
    // Threads still work (the SDK and asyncio may use them), and end with the process.
    let out = attempt("import threading\nt = threading.Thread(target=lambda: None)\nt.start(); t.join()\nprint('thread ok')").await;
    assert_eq!(out.trim(), "thread ok");
}

#[tokio::test]
async fn ptrace_and_reading_other_processes_memory_fail() {
    let out = attempt(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.ptrace(16, 1, 0, 0)\nprint('ptrace', r, ctypes.get_errno())",
    )
    .await;
    assert_eq!(
        out.trim(),
        "ptrace -1 1",
        "PTRACE_ATTACH refused with EPERM"
    );
    // No /proc at all: no process's memory, maps or environment to read, the host's (the
    // broker's) least of all; and the host is outside the sandbox's pid namespace anyway.
    let out = attempt("import os\nprint(os.path.exists('/proc'), os.getpid())").await;
    assert_eq!(
        out.trim(),
        "False 2",
        "the runner is pid 2 of its own namespace"
    );
    let out = attempt(&guarded(&format!(
        "open('/proc/{}/mem', 'rb').read(16)",
        std::process::id()
    )))
    .await;
    assert!(out.contains("refused"), "{out}");
    let out = attempt(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint('vm_readv', libc.syscall(310, 1, 0, 0, 0, 0, 0), ctypes.get_errno())",
    )
    .await;
    assert_eq!(out.trim(), "vm_readv -1 1");
}

#[tokio::test]
async fn namespaces_and_mounts_cannot_be_made_anew() {
    let out = attempt(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.unshare(0x10000000), ctypes.get_errno(), libc.mount(b'x', b'/scratch', b'tmpfs', 0, None), ctypes.get_errno())",
    )
    .await;
    assert_eq!(out.trim(), "-1 1 -1 1");
}
