"""agent/bpf_devices.py: the device program's bytes, and what they decide, run by a small
interpreter of the few instructions it uses (the kernel runs them in the e2e test)."""

from __future__ import annotations

import errno
import struct

import pytest

from pyslurm_lite.agent import bpf_devices as bpf

CHAR, BLOCK = 2, 1  # bpf_cgroup_dev_ctx device types
READ, WRITE, MKNOD = 2, 4, 1  # its access bits (the high 16 bits of access_type)


def decode(prog: bytes) -> list[tuple[int, int, int, int, int]]:
    """(code, dst, src, off, imm) per instruction."""
    assert len(prog) % bpf.INSN_SIZE == 0
    out = []
    for at in range(0, len(prog), bpf.INSN_SIZE):
        code, regs, off, imm = struct.unpack_from("<BBhi", prog, at)
        out.append((code, regs & 0xF, regs >> 4, off, imm))
    return out


def run(prog: bytes, dev_type: int, access: int, major: int, minor: int) -> int:
    """What the kernel's interpreter would return for this device access (1: allowed)."""
    ctx = struct.pack("<III", dev_type | (access << 16), major, minor)
    regs = [0] * 11
    insns, pc, steps = decode(prog), 0, 0
    while True:
        steps += 1
        assert steps < 10_000 and 0 <= pc < len(insns), "ran off the program"
        code, dst, src, off, imm = insns[pc]
        if code == bpf.LDX_MEM_W:
            assert src == 1, "only the context is read"
            regs[dst] = struct.unpack_from("<I", ctx, regs[src] + off)[0]
        elif code == bpf.ALU32_AND_K:
            regs[dst] = (regs[dst] & imm) & 0xFFFFFFFF
        elif code == bpf.MOV64_K:
            regs[dst] = imm
        elif code == bpf.JNE_K:
            if regs[dst] != imm:
                pc += off
        elif code == bpf.EXIT:
            return regs[0]
        else:
            raise AssertionError(f"unexpected opcode {code:#x} at {pc}")
        pc += 1


def test_the_worked_example_bytes():
    """deny [(195, 1)]: exactly the 11 instructions the module's docstring shows."""
    want = ["6112000000000000", "54020000ffff0000", "6114040000000000", "6115080000000000",
            "5502040002000000", "55040300c3000000", "5505020001000000", "b700000000000000",
            "9500000000000000", "b700000001000000", "9500000000000000"]
    prog = bpf.assemble([(195, 1)])
    assert [prog[i:i + 8].hex() for i in range(0, len(prog), 8)] == want


@pytest.mark.parametrize("deny,count", [([], 6), ([(195, 0)], 11), ([(195, 0), (195, 1), (10, 200)], 21)])
def test_instruction_count_and_shape(deny, count):
    insns = decode(bpf.assemble(deny))
    assert len(insns) == count  # 4 loads, 5 per denied device, allow + exit
    assert [i[0] for i in insns[:4]] == [bpf.LDX_MEM_W, bpf.ALU32_AND_K, bpf.LDX_MEM_W, bpf.LDX_MEM_W]
    assert [i[0] for i in insns[-2:]] == [bpf.MOV64_K, bpf.EXIT] and insns[-2][4] == bpf.ALLOW
    rules = [insns[4 + 5 * k:9 + 5 * k] for k in range(len(deny))]
    for (major, minor), rule in zip(deny, rules):
        assert [(c, d, imm) for c, d, _, _, imm in rule[:3]] == \
            [(bpf.JNE_K, 2, CHAR), (bpf.JNE_K, 4, major), (bpf.JNE_K, 5, minor)]
        assert [r[3] for r in rule[:3]] == [4, 3, 2]  # each miss lands on the next rule
        assert (rule[3][0], rule[3][4], rule[4][0]) == (bpf.MOV64_K, bpf.DENY, bpf.EXIT)


DENY = [(195, 0), (195, 2), (511, 7)]


@pytest.mark.parametrize("dev_type,access,major,minor,allowed", [
    (CHAR, READ, 195, 0, 0),             # a denied GPU, read
    (CHAR, WRITE | READ, 195, 2, 0),     # another, read-write
    (CHAR, MKNOD, 511, 7, 0),            # mknod is denied too (rwm)
    (CHAR, READ, 195, 1, 1),             # the job's own GPU
    (CHAR, READ, 195, 255, 1),           # nvidiactl and the like
    (CHAR, READ, 1, 3, 1),               # /dev/null
    (CHAR, READ, 196, 0, 1),             # same minor, other major
    (BLOCK, READ, 195, 0, 1),            # a block device with a denied GPU's numbers
])
def test_what_the_program_decides(dev_type, access, major, minor, allowed):
    assert run(bpf.assemble(DENY), dev_type, access, major, minor) == allowed


def test_an_empty_deny_list_allows_everything():
    assert run(bpf.assemble([]), CHAR, READ, 195, 0) == 1


@pytest.mark.parametrize("dev", [(-1, 0), (195, 1 << 31), (1 << 32, 0)])
def test_device_numbers_out_of_range_are_refused(dev):
    with pytest.raises(ValueError, match="out of range"):
        bpf.assemble([dev])


def test_an_unknown_machine_is_enosys(monkeypatch):
    monkeypatch.setattr(bpf.platform, "machine", lambda: "vax")
    with pytest.raises(bpf.BpfError) as e:
        bpf.load([])
    assert e.value.errno == errno.ENOSYS and "vax" in str(e.value)


def test_the_program_name_fits_the_kernel():
    assert len(bpf.PROG_NAME) < 16  # char prog_name[16], NUL included
