"""HPACK (RFC 7541), the header compression of HTTP/2, as much as a gRPC client needs.

Owns: encoding a request's header list and decoding a server's header blocks (static and
dynamic table, integers, literals, Huffman-coded strings). Must not: do I/O.

The encoder never indexes and never Huffman-codes (both are optional for a sender), so it keeps
no state; the decoder is stateful per connection, as the RFC requires.

Worked example, the block a gRPC server sends to open a reply:
    88                     indexed field 8 of the static table          -> :status: 200
    5f 10 "application/grpc"  literal, incremental indexing, name 31    -> content-type: ...
                              (and it enters the dynamic table as index 62)
The next reply on the connection says the same with one byte: `be` (indexed field 62).
"""

from __future__ import annotations


class HpackError(Exception):
    """A header block that does not decode (a protocol error, COMPRESSION_ERROR in HTTP/2)."""


STATIC_TABLE = (  # RFC 7541 Appendix A; index 1 is the first entry
    (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"),
    (":path", "/index.html"), (":scheme", "http"), (":scheme", "https"), (":status", "200"),
    (":status", "204"), (":status", "206"), (":status", "304"), (":status", "400"),
    (":status", "404"), (":status", "500"), ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""),
    ("accept", ""), ("access-control-allow-origin", ""), ("age", ""), ("allow", ""),
    ("authorization", ""), ("cache-control", ""), ("content-disposition", ""),
    ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
    ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""),
    ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
    ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
    ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""),
    ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""),
    ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""), ("set-cookie", ""),
    ("strict-transport-security", ""), ("transfer-encoding", ""), ("user-agent", ""),
    ("vary", ""), ("via", ""), ("www-authenticate", ""),
)
ENTRY_OVERHEAD = 32  # bytes the RFC adds to name + value when sizing the dynamic table
DEFAULT_TABLE_SIZE = 4096  # bytes, SETTINGS_HEADER_TABLE_SIZE's initial value

# Huffman code lengths in bits of symbols 0..256 (256 is EOS), RFC 7541 Appendix B. The code is
# canonical: codes are handed out in order of (length, symbol), so the lengths define it.
HUFFMAN_LENGTHS = bytes((
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5,
    6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6,
    7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23,
    23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22,
    22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22,
    23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27,
    27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25,
    24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
))
EOS = 256
_huffman_decode_table: dict[tuple[int, int], int] = {}


def huffman_codes() -> list[tuple[int, int]]:
    """(code, length in bits) of every symbol, built from HUFFMAN_LENGTHS."""
    codes: list[tuple[int, int]] = [(0, 0)] * 257
    code, prev_len = -1, min(HUFFMAN_LENGTHS)
    for sym in sorted(range(257), key=lambda s: (HUFFMAN_LENGTHS[s], s)):
        length = HUFFMAN_LENGTHS[sym]
        code = (code + 1) << (length - prev_len)
        prev_len = length
        codes[sym] = (code, length)
    return codes


def huffman_decode(data: bytes) -> bytes:
    """Huffman-coded octets back to the string; the padding must be a prefix of EOS (all ones,
    under 8 bits), as the RFC requires."""
    table = _huffman_decode_table
    if not table:
        table.update({(length, code): sym for sym, (code, length) in enumerate(huffman_codes())})
    out = bytearray()
    code = length = 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = (code << 1) | ((byte >> shift) & 1)
            length += 1
            sym = table.get((length, code))
            if sym is not None:
                if sym == EOS:
                    raise HpackError("EOS inside a Huffman-coded string")
                out.append(sym)
                code = length = 0
            elif length > 30:
                raise HpackError("bad Huffman code")
    if length > 7 or code != (1 << length) - 1:
        raise HpackError("bad Huffman padding")
    return bytes(out)


def encode_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """An integer with an N-bit prefix (RFC 7541 5.1); `first` holds the first octet's high bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _encode_str(text: str) -> bytes:
    raw = text.encode("latin-1")
    return encode_int(len(raw), 7) + raw  # H bit clear: not Huffman-coded


def encode(headers) -> bytes:
    """A header block for (name, value) pairs: each a literal field without indexing (so the
    peer's table never changes), its name taken from the static table where it is there."""
    out = bytearray()
    for name, value in headers:
        if (name, value) == (":method", "POST"):
            out.append(0x83)  # static index 3
        elif (name, value) == (":scheme", "http"):
            out.append(0x86)  # static index 6
        else:
            index = _STATIC_NAME_INDEX.get(name)
            if index:
                out += encode_int(index, 4)
            else:
                out += b"\x00" + _encode_str(name)
            out += _encode_str(value)
    return bytes(out)


_STATIC_NAME_INDEX: dict[str, int] = {}
for _i, (_name, _) in enumerate(STATIC_TABLE, 1):
    _STATIC_NAME_INDEX.setdefault(_name, _i)


class Decoder:
    """Decodes the header blocks of one connection, in order; keeps its dynamic table."""

    def __init__(self, max_table_size: int = DEFAULT_TABLE_SIZE):
        self.max_allowed = max_table_size  # what we told the peer (SETTINGS_HEADER_TABLE_SIZE)
        self.max_size = max_table_size  # what the peer last chose, at most max_allowed
        self.size = 0
        self.table: list[tuple[str, str]] = []  # newest first: index 62 is table[0]

    def decode(self, block: bytes) -> list[tuple[str, str]]:
        """The (name, value) pairs of one complete header block."""
        headers: list[tuple[str, str]] = []
        pos, end = 0, len(block)
        while pos < end:
            byte = block[pos]
            if byte & 0x80:  # indexed field
                index, pos = self._int(block, pos, 7)
                headers.append(self._entry(index))
            elif byte & 0x40:  # literal with incremental indexing
                name, value, pos = self._literal(block, pos, 6)
                headers.append((name, value))
                self._add(name, value)
            elif byte & 0x20:  # dynamic table size update
                size, pos = self._int(block, pos, 5)
                if size > self.max_allowed:
                    raise HpackError(f"table size {size} above the {self.max_allowed} allowed")
                self.max_size = size
                self._evict()
            else:  # literal without indexing (0000) or never indexed (0001)
                name, value, pos = self._literal(block, pos, 4)
                headers.append((name, value))
        return headers

    def _entry(self, index: int) -> tuple[str, str]:
        if 1 <= index <= len(STATIC_TABLE):
            return STATIC_TABLE[index - 1]
        dynamic = index - len(STATIC_TABLE) - 1
        if index == 0 or dynamic >= len(self.table):
            raise HpackError(f"header index {index} out of range")
        return self.table[dynamic]

    def _literal(self, block: bytes, pos: int, prefix_bits: int) -> tuple[str, str, int]:
        index, pos = self._int(block, pos, prefix_bits)
        if index:
            name = self._entry(index)[0]
        else:
            name, pos = self._str(block, pos)
        value, pos = self._str(block, pos)
        return name, value, pos

    def _add(self, name: str, value: str) -> None:
        self.table.insert(0, (name, value))
        self.size += len(name) + len(value) + ENTRY_OVERHEAD
        self._evict()

    def _evict(self) -> None:
        while self.size > self.max_size and self.table:
            name, value = self.table.pop()
            self.size -= len(name) + len(value) + ENTRY_OVERHEAD

    @staticmethod
    def _int(block: bytes, pos: int, prefix_bits: int) -> tuple[int, int]:
        limit = (1 << prefix_bits) - 1
        if pos >= len(block):
            raise HpackError("header block ends inside an integer")
        value = block[pos] & limit
        pos += 1
        if value < limit:
            return value, pos
        shift = 0
        while True:
            if pos >= len(block) or shift > 28:
                raise HpackError("bad integer in header block")
            byte = block[pos]
            pos += 1
            value += (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, pos

    @classmethod
    def _str(cls, block: bytes, pos: int) -> tuple[str, int]:
        if pos >= len(block):
            raise HpackError("header block ends inside a string")
        huffman = block[pos] & 0x80
        length, pos = cls._int(block, pos, 7)
        if pos + length > len(block):
            raise HpackError("header block ends inside a string")
        raw = block[pos:pos + length]
        if huffman:
            raw = huffman_decode(raw)
        return raw.decode("latin-1"), pos + length
