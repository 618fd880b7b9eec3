//! The seccomp filter every sandboxed runner gets (through bubblewrap's `--seccomp`): a classic
//! BPF program, built here rather than with libseccomp so the sandbox needs no library. It is
//! defence beside the namespaces, not instead of them: the network namespace already has no
//! interface, and the filter also refuses every socket but a Unix one; the pid namespace hides
//! other processes, and the filter also refuses `ptrace`, reading other processes' memory and
//! creating processes at all (a script can start no process that outlives its call).
//!
//! Not here: which files the runner sees (bubblewrap's mounts, `sandbox.rs`).

/// `AUDIT_ARCH_X86_64`: the only architecture the filter is written for; any other syscall
/// convention kills the process.
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
/// x32 system calls (the `__X32_SYSCALL_BIT`) would reach the same kernel code under other
/// numbers: killed.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

const EPERM: u32 = 1;
const EAFNOSUPPORT: u32 = 97;
const ENOSYS: u32 = 38;

const AF_UNIX: u32 = 1;
const CLONE_THREAD: u32 = 0x0001_0000;

// struct seccomp_data: nr at 0, arch at 4, instruction pointer at 8, args[6] (u64) from 16.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG0_LOW: u32 = 16;

// Classic BPF opcodes.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

/// System calls refused with `EPERM`, by x86_64 number: what a script never needs and a
/// sandbox escape often does.
const DENIED: &[(u32, &str)] = &[
    (101, "ptrace"),
    (310, "process_vm_readv"),
    (311, "process_vm_writev"),
    (57, "fork"),
    (58, "vfork"),
    (165, "mount"),
    (166, "umount2"),
    (155, "pivot_root"),
    (161, "chroot"),
    (272, "unshare"),
    (308, "setns"),
    (248, "add_key"),
    (249, "request_key"),
    (250, "keyctl"),
    (321, "bpf"),
    (298, "perf_event_open"),
    (246, "kexec_load"),
    (320, "kexec_file_load"),
    (175, "init_module"),
    (313, "finit_module"),
    (176, "delete_module"),
    (169, "reboot"),
    (167, "swapon"),
    (168, "swapoff"),
    (323, "userfaultfd"),
    (303, "name_to_handle_at"),
    (304, "open_by_handle_at"),
    (425, "io_uring_setup"),
    (426, "io_uring_enter"),
    (427, "io_uring_register"),
    (428, "open_tree"),
    (429, "move_mount"),
    (430, "fsopen"),
    (431, "fsconfig"),
    (432, "fsmount"),
    (433, "fspick"),
    (442, "mount_setattr"),
    (163, "acct"),
    (172, "iopl"),
    (173, "ioperm"),
    (135, "personality"),
    (312, "kcmp"),
    (317, "seccomp"),
];
const SYS_SOCKET: u32 = 41;
const SYS_SOCKETPAIR: u32 = 53;
const SYS_CLONE: u32 = 56;
/// `clone3` passes its flags in memory the filter cannot read: refused with `ENOSYS`, so the C
/// library falls back to `clone`, whose flags it can.
const SYS_CLONE3: u32 = 435;

/// One instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

fn program() -> Vec<Insn> {
    let mut p = vec![
        stmt(LD_W_ABS, OFFSET_ARCH),
        jump(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(RET_K, SECCOMP_RET_KILL_PROCESS),
        stmt(LD_W_ABS, OFFSET_NR),
        jump(JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(RET_K, SECCOMP_RET_KILL_PROCESS),
    ];
    for &(nr, _) in DENIED {
        p.push(jump(JEQ_K, nr, 0, 1));
        p.push(stmt(RET_K, SECCOMP_RET_ERRNO | EPERM));
    }
    p.push(jump(JEQ_K, SYS_CLONE3, 0, 1));
    p.push(stmt(RET_K, SECCOMP_RET_ERRNO | ENOSYS));
    // Sockets: Unix ones only (the accumulator holds the call's number until a block is entered;
    // every entered block ends in a return).
    for nr in [SYS_SOCKET, SYS_SOCKETPAIR] {
        p.push(jump(JEQ_K, nr, 0, 4));
        p.push(stmt(LD_W_ABS, OFFSET_ARG0_LOW));
        p.push(jump(JEQ_K, AF_UNIX, 0, 1));
        p.push(stmt(RET_K, SECCOMP_RET_ALLOW));
        p.push(stmt(RET_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT));
    }
    // clone: threads only (a new process would need neither `CLONE_THREAD`).
    p.push(jump(JEQ_K, SYS_CLONE, 0, 4));
    p.push(stmt(LD_W_ABS, OFFSET_ARG0_LOW));
    p.push(jump(JSET_K, CLONE_THREAD, 0, 1));
    p.push(stmt(RET_K, SECCOMP_RET_ALLOW));
    p.push(stmt(RET_K, SECCOMP_RET_ERRNO | EPERM));
    p.push(stmt(RET_K, SECCOMP_RET_ALLOW));
    p
}

/// The filter as bubblewrap reads it: `struct sock_filter` records in the machine's byte order.
/// `None` on an architecture it is not written for (the sandbox is then unavailable: no filter,
/// no runner).
pub fn filter_bytes() -> Option<Vec<u8>> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return None;
    }
    let mut out = Vec::new();
    for i in program() {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    Some(out)
}

/// The names of the refused system calls, for `doctor` and the docs.
pub fn denied_names() -> impl Iterator<Item = &'static str> {
    DENIED.iter().map(|(_, name)| *name).chain([
        "clone3",
        "clone (a new process)",
        "socket (not AF_UNIX)",
        "socketpair (not AF_UNIX)",
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program over one `seccomp_data` the way the kernel does (a tiny interpreter for
    /// the opcodes it uses), so each rule is a table row.
    fn run(nr: u32, arch: u32, arg0: u64) -> u32 {
        let p = program();
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = p[pc];
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        OFFSET_NR => nr,
                        OFFSET_ARCH => arch,
                        OFFSET_ARG0_LOW => arg0 as u32,
                        other => panic!("load from {other}"),
                    };
                    pc += 1;
                }
                JEQ_K | JGE_K | JSET_K => {
                    let taken = match i.code {
                        JEQ_K => acc == i.k,
                        JGE_K => acc >= i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += 1 + usize::from(if taken { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                other => panic!("opcode {other:#x}"),
            }
        }
    }

    #[test]
    fn each_rule_gives_its_answer() {
        let x86 = AUDIT_ARCH_X86_64;
        let table: &[(&str, u32, u32, u64, u32)] = &[
            ("read", 0, x86, 0, SECCOMP_RET_ALLOW),
            ("write", 1, x86, 0, SECCOMP_RET_ALLOW),
            ("execve", 59, x86, 0, SECCOMP_RET_ALLOW),
            ("ptrace", 101, x86, 0, SECCOMP_RET_ERRNO | EPERM),
            ("process_vm_readv", 310, x86, 0, SECCOMP_RET_ERRNO | EPERM),
            ("fork", 57, x86, 0, SECCOMP_RET_ERRNO | EPERM),
            ("mount", 165, x86, 0, SECCOMP_RET_ERRNO | EPERM),
            ("unshare", 272, x86, 0, SECCOMP_RET_ERRNO | EPERM),
            ("io_uring_setup", 425, x86, 0, SECCOMP_RET_ERRNO | EPERM),
            ("clone3", 435, x86, 0, SECCOMP_RET_ERRNO | ENOSYS),
            ("socket(AF_UNIX)", 41, x86, 1, SECCOMP_RET_ALLOW),
            (
                "socket(AF_INET)",
                41,
                x86,
                2,
                SECCOMP_RET_ERRNO | EAFNOSUPPORT,
            ),
            (
                "socket(AF_INET6)",
                41,
                x86,
                10,
                SECCOMP_RET_ERRNO | EAFNOSUPPORT,
            ),
            (
                "socket(AF_NETLINK)",
                41,
                x86,
                16,
                SECCOMP_RET_ERRNO | EAFNOSUPPORT,
            ),
            ("socketpair(AF_UNIX)", 53, x86, 1, SECCOMP_RET_ALLOW),
            (
                "socketpair(AF_INET)",
                53,
                x86,
                2,
                SECCOMP_RET_ERRNO | EAFNOSUPPORT,
            ),
            ("clone(a thread)", 56, x86, 0x3d0f00, SECCOMP_RET_ALLOW),
            (
                "clone(a process)",
                56,
                x86,
                0x1200011,
                SECCOMP_RET_ERRNO | EPERM,
            ),
            (
                "x32 read",
                X32_SYSCALL_BIT,
                x86,
                0,
                SECCOMP_RET_KILL_PROCESS,
            ),
            ("i386 call", 1, 0x4000_0003, 0, SECCOMP_RET_KILL_PROCESS),
        ];
        for &(what, nr, arch, arg0, want) in table {
            assert_eq!(run(nr, arch, arg0), want, "{what}");
        }
    }

    #[test]
    fn every_jump_lands_inside_the_program() {
        let p = program();
        for (pc, i) in p.iter().enumerate() {
            if matches!(i.code, JEQ_K | JGE_K | JSET_K) {
                assert!(pc + 1 + usize::from(i.jt.max(i.jf)) < p.len(), "{pc}");
            }
        }
        assert_eq!(p.last().map(|i| i.code), Some(RET_K));
        assert!(p.len() < 4096, "BPF_MAXINSNS");
    }
}
