"""Device fencing on cgroup v2 (task/cgroup's ConstrainDevices): v2 has no devices controller;
the kernel asks a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the cgroup instead, as runc,
crun and Slurm's cgroup/v2 plugin do. The program is assembled here by hand (no compiler at run
time) and loaded with the bpf(2) system call through ctypes.

Owns: the program's bytes, bpf(2) BPF_PROG_LOAD / BPF_PROG_ATTACH / BPF_PROG_DETACH /
BPF_PROG_QUERY. Must not: choose which devices a job may use (the agent did) or make cgroups.

The kernel calls the program with r1 -> struct bpf_cgroup_dev_ctx { u32 access_type (device
type in the low 16 bits, access in the high 16); u32 major; u32 minor; } and lets the access
through when it returns 1. Worked example, deny [(195, 1)] (what Slurm's ebpf.c builds for a
job's denied devices, less the access half it loads and never reads); the bytes as in memory:
code, src<<4|dst, off (s16 LE), imm (s32 LE):

     0: r2 = *(u32 *)(r1 + 0)     61 12 0000 00000000   type|access
     1: w2 &= 0xffff              54 02 0000 ffff0000   type
     2: r4 = *(u32 *)(r1 + 4)     61 14 0400 00000000   major
     3: r5 = *(u32 *)(r1 + 8)     61 15 0800 00000000   minor
     4: if r2 != 2 goto +4        55 02 0400 02000000   not a char device: next rule
     5: if r4 != 195 goto +3      55 04 0300 c3000000
     6: if r5 != 1 goto +2        55 05 0200 01000000
     7: r0 = 0                    b7 00 0000 00000000   this device: denied (EPERM)
     8: exit                      95 00 0000 00000000
     9: r0 = 1                    b7 00 0000 01000000   anything else: allowed
    10: exit                      95 00 0000 00000000

Attached with BPF_F_ALLOW_MULTI, a program joins those of the cgroup's ancestors (an access must
pass them all) and every cgroup below (the steps') runs it too. The program's fd is closed once
attached: the attachment holds the program, and the kernel frees both when the cgroup is removed.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct

# bpf(2) commands, program type, attach type and flag (include/uapi/linux/bpf.h)
BPF_PROG_LOAD = 5
BPF_PROG_ATTACH = 8
BPF_PROG_DETACH = 9
BPF_PROG_QUERY = 16
BPF_PROG_TYPE_CGROUP_DEVICE = 15
BPF_CGROUP_DEVICE = 6
BPF_F_ALLOW_MULTI = 2
BPF_DEVCG_DEV_CHAR = 2  # bpf_cgroup_dev_ctx's device type for a char device

# instruction opcodes (class | size/op | source)
LDX_MEM_W = 0x61  # BPF_LDX | BPF_W | BPF_MEM
ALU32_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
JNE_K = 0x55  # BPF_JMP | BPF_JNE | BPF_K
MOV64_K = 0xB7  # BPF_ALU64 | BPF_MOV | BPF_K
EXIT = 0x95  # BPF_JMP | BPF_EXIT
INSN_SIZE = 8  # bytes: u8 code, u8 dst:4|src:4, s16 off, s32 imm

DENY, ALLOW = 0, 1
PROG_NAME = b"pyslurm_devices"  # at most 15 bytes: the kernel's prog_name is char[16]
LICENSE = b"GPL"
LOG_SIZE = 1 << 16  # bytes of verifier log asked for when a load is refused

# __NR_bpf by machine (asm-generic numbering for the newer ones)
SYSCALL_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351,
               "i686": 357, "armv7l": 386}


class BpfError(OSError):
    """bpf(2) refused: errno says why (EPERM without CAP_BPF/CAP_SYS_ADMIN or when an ancestor
    cgroup's program forbids others, ENOSYS on a kernel without bpf(2))."""


def _buf(data: bytes) -> ctypes.Array:
    """A C buffer of exactly these bytes (create_string_buffer would add a NUL)."""
    return (ctypes.c_char * len(data)).from_buffer_copy(data)


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def assemble(deny: list[tuple[int, int]]) -> bytes:
    """The program that denies every access (rwm) to the char devices (major, minor) in deny
    and allows everything else."""
    prog = [
        _insn(LDX_MEM_W, dst=2, src=1, off=0),
        _insn(ALU32_AND_K, dst=2, imm=0xFFFF),
        _insn(LDX_MEM_W, dst=4, src=1, off=4),
        _insn(LDX_MEM_W, dst=5, src=1, off=8),
    ]
    for major, minor in deny:
        if not (0 <= major < 1 << 31 and 0 <= minor < 1 << 31):
            raise ValueError(f"device number {major}:{minor} out of range")
        prog += [
            _insn(JNE_K, dst=2, imm=BPF_DEVCG_DEV_CHAR, off=4),  # skip to the next rule
            _insn(JNE_K, dst=4, imm=major, off=3),
            _insn(JNE_K, dst=5, imm=minor, off=2),
            _insn(MOV64_K, dst=0, imm=DENY),
            _insn(EXIT),
        ]
    prog += [_insn(MOV64_K, dst=0, imm=ALLOW), _insn(EXIT)]
    return b"".join(prog)


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    nr = SYSCALL_BPF.get(platform.machine())
    if nr is None:
        raise BpfError(errno.ENOSYS, f"bpf(2): no system call number known for {platform.machine()}")
    ret = _libc().syscall(ctypes.c_long(nr), ctypes.c_long(cmd), attr, ctypes.c_ulong(len(attr)))
    if ret < 0:
        err = ctypes.get_errno()
        raise BpfError(err, os.strerror(err))
    return ret


def load(deny: list[tuple[int, int]]) -> int:
    """BPF_PROG_LOAD: the fd of the loaded program (the caller closes it)."""
    code = _buf(assemble(deny))
    lic = ctypes.create_string_buffer(LICENSE)  # NUL-terminated, as the kernel reads it
    attr = _load_attr(code, lic)
    try:
        return _bpf(BPF_PROG_LOAD, attr)
    except BpfError as e:
        if e.errno not in (errno.EINVAL, errno.EACCES):
            raise
        # refused by the verifier: load again with its log, to say why
        log = ctypes.create_string_buffer(LOG_SIZE)
        try:
            return _bpf(BPF_PROG_LOAD, _load_attr(code, lic, log))
        except BpfError as again:
            said = log.value.decode(errors="replace").strip().splitlines()
            raise BpfError(again.errno, f"{again.strerror}: {said[-1] if said else 'no log'}") from None


def _load_attr(code, lic, log=None) -> ctypes.Array:
    # union bpf_attr, BPF_PROG_LOAD's fields up to expected_attach_type (72 bytes)
    attr = _buf(bytes(72))
    struct.pack_into("<IIQQIIQII", attr, 0, BPF_PROG_TYPE_CGROUP_DEVICE,
                     len(code) // INSN_SIZE, ctypes.addressof(code), ctypes.addressof(lic),
                     1 if log is not None else 0, len(log) if log is not None else 0,
                     ctypes.addressof(log) if log is not None else 0, 0, 0)
    attr[48:48 + len(PROG_NAME)] = PROG_NAME
    return attr


def _attach_attr(cgroup_fd: int, prog_fd: int, flags: int) -> ctypes.Array:
    # target_fd, attach_bpf_fd, attach_type, attach_flags, replace_bpf_fd
    return _buf(struct.pack("<IIIII", cgroup_fd, prog_fd, BPF_CGROUP_DEVICE, flags, 0))


def _with_cgroup(path: str, fn):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return fn(fd)
    finally:
        os.close(fd)


def fence(cgroup: str, deny: list[tuple[int, int]]) -> None:
    """Deny the devices to every process in the cgroup directory and below it."""
    prog = load(deny)
    try:
        _with_cgroup(cgroup, lambda fd: _bpf(BPF_PROG_ATTACH, _attach_attr(fd, prog, BPF_F_ALLOW_MULTI)))
    finally:
        os.close(prog)  # the attachment keeps the program alive


def probe(cgroup: str) -> None:
    """Load and attach a program that denies nothing, then detach it: BpfError when this
    process cannot fence devices in that cgroup."""
    prog = load([])
    try:
        def attach_detach(fd: int) -> None:
            _bpf(BPF_PROG_ATTACH, _attach_attr(fd, prog, BPF_F_ALLOW_MULTI))
            _bpf(BPF_PROG_DETACH, _attach_attr(fd, prog, 0))
        _with_cgroup(cgroup, attach_detach)
    finally:
        os.close(prog)


def attached(cgroup: str, max_ids: int = 64) -> list[int]:
    """The ids of the device programs attached to the cgroup itself (not inherited ones)."""
    ids = (ctypes.c_uint32 * max_ids)()

    def query(fd: int) -> list[int]:
        # target_fd, attach_type, query_flags, attach_flags, prog_ids, prog_cnt
        attr = _buf(struct.pack("<IIIIQI4x", fd, BPF_CGROUP_DEVICE, 0, 0,
                                ctypes.addressof(ids), max_ids))
        _bpf(BPF_PROG_QUERY, attr)
        count = struct.unpack_from("<I", attr, 24)[0]
        return list(ids[:count])
    return _with_cgroup(cgroup, query)
