"""The agent's line buffer: whole lines out, pieces kept until their newline or the end."""

import pytest

from pyslurm_lite.agent.iobuf import LineBuffer


@pytest.mark.parametrize("reads, sent, rest", [
    ([b"t0 ", b"l1\n"], [b"", b"t0 l1\n"], b""),
    ([b"a\nb", b"c\nd"], [b"a\n", b"bc\n"], b"d"),
    ([b"x\ny\n"], [b"x\ny\n"], b""),
    ([b""], [b""], b""),
    ([b"abcdef"], [b"abcdef"], b""),        # a line longer than max_line goes out in pieces
    ([b"a\nbcdefg"], [b"a\nbcdefg"], b""),
])
def test_line_buffer(reads, sent, rest):
    buf = LineBuffer(max_line=4)
    assert [buf.feed(r) for r in reads] == sent
    assert buf.close() == rest
