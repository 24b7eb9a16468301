"""The program that supervises one snippet run inside its sandbox; sandbox.py passes its text to the host
interpreter with `-I -S -c` (no environment variable, no site, no current folder can change what it imports, and no
file of the project, which may be hidden, is read inside the sandbox).

    python -I -S -c <this text> STATUS_FD MEMORY CPU FILE_SIZE ENV ARGV...

It forks the snippet into a session of its own with the resource limits set, waits for it and reports on STATUS_FD
`pid <n>` once the snippet started and `exit <status>` (negative: the signal) once it ended. Inside a PID namespace
it is PID 1, which ignores every signal it has no handler for (SIGINT, the one Python handles, is ignored outright);
when it exits, the kernel kills whatever the snippet left behind. The snippet gets exactly the variables ENV (a
dict, marshal in hex): they are never this program's environment, nor its launchers', so that no variable a case
names can change how the confinement itself starts.

Under the namespace confinement (IsolationKind.NAMESPACES, sandbox.py) util-linux `unshare` starts it as root of
fresh mount, network, PID, IPC, UTS and cgroup namespaces, and the variable GOTCHAS_SANDBOX holds the plan (built by
sandbox.py, never a shell string; marshal in hex, which costs no import). Before the snippet starts, it builds what bubblewrap builds
from the same plan:

- every mount read-only (each one remounted, keeping its nosuid/nodev/noexec flags);
- a fresh /proc with /proc/sys, /proc/sysrq-trigger, /proc/irq and /proc/bus read-only; a minimal /dev (null, zero,
  full, random, urandom, tty, a private devpts) and a private /dev/shm;
- the plan's steps in order: a hidden folder becomes an empty read-only tmpfs (mode 0000, or 0111 when an
  interpreter folder is bound back inside it), a hidden file an empty file of mode 0000, a private folder a
  size-limited writable tmpfs; the host folders and files the run needs are bound back read-only, the symlinks on
  the way to an interpreter made again;
- the loopback interface up (the network namespace has nothing else), the working directory entered;

and the snippet's process drops every capability (bounding set, inheritable, ambient; no_new_privs) before it
executes the snippet. Under every isolation the snippet's process also joins a session keyring of its own and
installs a seccomp filter that refuses the kernel keyring syscalls (`_keyring_filter`). Anything that fails is reported on stderr with exit status 126 before the snippet starts.
"""

import marshal
import os
import resource
import signal
import sys


def _fail(message):
    os.write(2, ("cannot confine the snippet: %s\n" % message).encode("utf-8", "backslashreplace"))
    os._exit(126)


class _Mounts:
    """mount(2), umount2(2), prctl(2) and capset(2) through ctypes."""

    MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
    MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
    MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21

    def __init__(self):
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                                    ctypes.c_char_p)

    def _check(self, result, what):
        if result != 0:
            errno = self.ctypes.get_errno()
            raise OSError(errno, "%s: %s" % (what, os.strerror(errno)))

    def mount(self, source, target, fstype, flags, data=None):
        enc = lambda s: None if s is None else s.encode("utf-8", "surrogateescape")
        self._check(self.libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
                    "mount %s on %s" % (fstype or source or "", target))

    def kept_flags(self, path):
        """The flags of the mount at `path` that a remount must keep (in a user namespace the kernel refuses to
        clear them)."""
        have = os.statvfs(path).f_flag
        pairs = ((os.ST_NOSUID, self.MS_NOSUID), (os.ST_NODEV, self.MS_NODEV), (os.ST_NOEXEC, self.MS_NOEXEC),
                 (os.ST_NOATIME, self.MS_NOATIME), (os.ST_NODIRATIME, self.MS_NODIRATIME),
                 (getattr(os, "ST_RELATIME", 4096), self.MS_RELATIME))
        return sum(ms for st, ms in pairs if have & st)

    def read_only(self, path):
        self.mount(None, path, None, self.MS_REMOUNT | self.MS_BIND | self.MS_RDONLY | self.kept_flags(path))

    def bind(self, source, target):
        self.mount(source, target, None, self.MS_BIND | self.MS_REC)
        self.read_only(target)

    def tmpfs(self, target, mode, size):
        self.mount("tmpfs", target, "tmpfs", self.MS_NOSUID | self.MS_NODEV, "mode=%o,size=%d" % (mode, size))

    def drop_capabilities(self):
        """No capability survives the exec of the snippet, even as root: the bounding set is emptied, the
        inheritable and ambient sets cleared, and no_new_privs keeps setuid programs from giving any back."""
        libc, ctypes = self.libc, self.ctypes
        self._check(libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            self._check(libc.prctl(24, cap, 0, 0, 0), "prctl(PR_CAPBSET_DROP, %d)" % cap)
        libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL (before kernel 4.3: no ambient set)
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable, twice: all empty
        self._check(libc.capset(header, data), "capset")


# The kernel keyring syscalls (add_key, request_key, keyctl) per machine: (audit arch, their numbers, the
# first number of another ABI sharing the arch: x32 on x86_64).
_KEY_SYSCALLS = {"x86_64": (0xC000003E, (248, 249, 250), 0x40000000),
                 "aarch64": (0xC00000B7, (217, 218, 219), None)}


def _keyring_filter():
    """The kernel's keyrings are not namespaced for root: a key the host added to root's keyrings could be read by
    its serial number. `_no_keyrings(filter)`, in the snippet's process, joins a fresh session keyring and installs
    this seccomp filter, which makes the keyring syscalls fail with EPERM, as it does every syscall of another
    architecture or ABI (which could reach them by other numbers). Built before the fork (ctypes is imported once);
    None where the machine's numbers are not known: there the keyrings are not confined (docs/isolation.md)."""
    known = _KEY_SYSCALLS.get(os.uname().machine)
    if known is None:
        return None
    import ctypes

    arch, numbers, other_abi = known
    deny, allow = 0x00050000 | 1, 0x7FFF0000  # SECCOMP_RET_ERRNO | EPERM, SECCOMP_RET_ALLOW
    # (code, jump if true, jump if false, k); "deny" is a jump to the last instruction
    code = [(0x20, 0, 0, 4), (0x15, 0, "deny", arch), (0x20, 0, 0, 0)]  # ld arch; jeq arch; ld nr
    if other_abi is not None:
        code.append((0x35, "deny", 0, other_abi))  # jge: x32's numbers
    code += [(0x15, "deny", 0, n) for n in numbers] + [(0x06, 0, 0, allow), (0x06, 0, 0, deny)]
    last = len(code) - 1

    class Filter(ctypes.Structure):
        _fields_ = (("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32))

    class Program(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter)))

    to = lambda n, jump: last - n - 1 if jump == "deny" else jump
    array = (Filter * len(code))(*(Filter(op, to(n, jt), to(n, jf), k) for n, (op, jt, jf, k) in enumerate(code)))
    return ctypes, ctypes.CDLL(None, use_errno=True), numbers[2], Program(len(code), array), array


def _no_keyrings(built):
    """In the snippet's process, before it executes the snippet: a fresh session keyring, then the filter."""
    if built is None:
        return
    ctypes, libc, keyctl, program, _ = built
    libc.syscall(keyctl, 1, None)  # keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): an anonymous session keyring
    # PR_SET_NO_NEW_PRIVS (a filter needs it), then PR_SET_SECCOMP with SECCOMP_MODE_FILTER
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "seccomp: %s" % os.strerror(errno))


def _unescape(field):
    """A path of /proc/self/mountinfo: space, tab, newline and backslash are written as octal escapes."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mount_points():
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        return [_unescape(line.split()[4]) for line in f if line.strip()]


def _make_dir(path, mode):
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    os.chmod(path, mode)


def _make_file(path):
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _make_dev(m, devices, size):
    """A fresh /dev of the few devices a program needs, bound through the host's /proc/self/fd (so before /proc)."""
    fd = lambda n: "/proc/self/fd/%d" % n
    m.tmpfs("/dev", 0o755, 1 << 20)
    for name, source in devices.items():
        _make_file("/dev/" + name)
        m.mount(fd(source), "/dev/" + name, None, m.MS_BIND)
    for name, target in (("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"),
                         ("fd", "/proc/self/fd"), ("core", "/proc/kcore"), ("ptmx", "pts/ptmx")):
        os.symlink(target, "/dev/" + name)
    for name in ("shm", "pts"):
        os.mkdir("/dev/" + name, 0o755)
    try:
        m.mount("devpts", "/dev/pts", "devpts", m.MS_NOSUID | m.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    except OSError:
        pass  # no pseudo-terminals then, as under bubblewrap where the kernel refuses them
    m.tmpfs("/dev/shm", 0o1777, size)


def _apply_steps(m, plan, sources):
    """The plan's steps, in its order: hide, make private, show, link, seal."""
    fd = lambda n: "/proc/self/fd/%d" % n
    for step in plan["steps"]:
        kind, path = step[0], step[1]
        if kind == "hide-dir":
            m.tmpfs(path, step[2], plan["hidden_size"])
        elif kind == "hide-file":
            m.bind(fd(sources[plan["empty"]]), path)
        elif kind == "private":
            m.tmpfs(path, step[2], plan["size"])
        elif kind == "dir":
            _make_dir(path, step[2])
        elif kind == "show":
            if step[2]:
                _make_dir(path, 0o755) if not os.path.isdir(path) else None
            else:
                _make_file(path)
            m.bind(fd(sources[path]), path)
        elif kind == "link":
            os.symlink(step[2], path)
        elif kind == "seal":
            m.read_only(path)
        else:
            raise ValueError("unknown step %r" % (kind,))


def _mount_proc(m, plan, empty):
    """A fresh /proc for the PID namespace; what in it could change the machine stays read-only, and the host's
    kernel keys are the empty file (`empty`, an O_PATH descriptor)."""
    m.mount("proc", "/proc", "proc", m.MS_NOSUID | m.MS_NODEV | m.MS_NOEXEC)
    for name in plan["proc_covered"]:
        path = "/proc/" + name
        if os.path.exists(path):
            m.mount(path, path, None, m.MS_BIND | m.MS_REC)
            m.read_only(path)
    for name in plan["proc_hidden"]:
        path = "/proc/" + name
        if os.path.exists(path):
            m.bind("/proc/self/fd/%d" % empty, path)


def confine(plan):
    plan = marshal.loads(bytes.fromhex(plan))
    m = _Mounts()
    size = plan["size"]
    m.mount(None, "/", None, m.MS_REC | m.MS_PRIVATE)  # nothing done here reaches the host (unshare does it too)
    # The host's files that are bound back are opened first: once a tmpfs covers /tmp or /root they are out of
    # sight. /proc/self/fd/N names each one afterwards.
    sources = {plan["empty"]: os.open(plan["empty"], os.O_PATH | os.O_CLOEXEC)}  # also bound over /proc/keys
    for step in plan["steps"]:
        if step[0] in ("show", "hide-file"):
            source = step[1] if step[0] == "show" else plan["empty"]
            if source not in sources:
                sources[source] = os.open(source, os.O_PATH | os.O_CLOEXEC)
    devices = {name: os.open("/dev/" + name, os.O_PATH | os.O_CLOEXEC)
               for name in plan["devices"] if os.path.exists("/dev/" + name)}
    for point in _mount_points():
        try:
            m.read_only(point)
        except OSError as error:  # a mount point this process cannot reach cannot be reached by the snippet either
            if error.errno not in (1, 2, 13):
                raise
    _make_dev(m, devices, size)
    _apply_steps(m, plan, sources)
    m.read_only("/dev")
    _mount_proc(m, plan, sources[plan["empty"]])
    for source in (*sources.values(), *devices.values()):
        os.close(source)
    _loopback_up()
    os.chdir(plan["workdir"])
    return m


def _loopback_up():
    """The network namespace has only `lo`, down: up, as bubblewrap does, so that a snippet may serve itself."""
    import _socket  # not socket, nor struct: their imports (enum, re) cost more than all the mounts
    import fcntl

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        name = b"lo".ljust(16, b"\0")  # struct ifreq: the name, then ifr_flags (a short), padded to 40 bytes
        flags = int.from_bytes(fcntl.ioctl(s.fileno(), 0x8913, name + bytes(24))[16:18], sys.byteorder)  # SIOCGIFFLAGS
        flags |= 0x1 | 0x40  # IFF_UP, IFF_RUNNING
        fcntl.ioctl(s.fileno(), 0x8914, name + flags.to_bytes(2, sys.byteorder) + bytes(22))  # SIOCSIFFLAGS
    finally:
        s.close()


def main():
    status, mem, cpu, fsize = (int(x) for x in sys.argv[1:5])
    env, argv = marshal.loads(bytes.fromhex(sys.argv[5])), sys.argv[6:]
    plan = os.environ.pop("GOTCHAS_SANDBOX", None)
    mounts = None
    if plan is not None:
        try:
            mounts = confine(plan)
        except Exception as error:
            _fail(str(error))
    keyrings = _keyring_filter()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(status)
            if mounts is not None:
                mounts.drop_capabilities()
            os.setsid()
            _no_keyrings(keyrings)
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.execve(argv[0], argv, env)
        except BaseException as error:
            os.write(2, ("cannot run %s: %s\n" % (argv[0], error)).encode())
        os._exit(127)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.write(status, b"pid %d\n" % pid)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _, code = os.waitpid(pid, 0)
    code = -os.WTERMSIG(code) if os.WIFSIGNALED(code) else os.WEXITSTATUS(code)
    os.write(status, b"exit %d\n" % code)


if __name__ == "__main__":
    main()
