"""hpack_lite: RFC 7541's own examples (Appendix C), the Huffman code, what our encoder emits."""

from __future__ import annotations

import pytest

from pyslurm_lite.rpc import hpack_lite
from pyslurm_lite.rpc.hpack_lite import Decoder, HpackError

# RFC 7541 C.4: three requests on one connection, Huffman-coded, each adding to the table.
REQUESTS = [
    ("828684418cf1e3c2e5f23a6ba0ab90f4ff",
     [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
     [(":authority", "www.example.com")]),
    ("828684be5886a8eb10649cbf",
     [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"),
      ("cache-control", "no-cache")],
     [("cache-control", "no-cache"), (":authority", "www.example.com")]),
    ("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
     [(":method", "GET"), (":scheme", "https"), (":path", "/index.html"),
      (":authority", "www.example.com"), ("custom-key", "custom-value")],
     [("custom-key", "custom-value"), ("cache-control", "no-cache"),
      (":authority", "www.example.com")]),
]
# RFC 7541 C.6: three responses with a 256-byte table, so entries are evicted.
DATE1, DATE2 = "Mon, 21 Oct 2013 20:13:21 GMT", "Mon, 21 Oct 2013 20:13:22 GMT"
COOKIE = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
RESPONSES = [
    ("488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c7"
     "8f0b97c8e9ae82ae43d3",
     [(":status", "302"), ("cache-control", "private"), ("date", DATE1),
      ("location", "https://www.example.com")],
     222),
    ("4883640effc1c0bf",
     [(":status", "307"), ("cache-control", "private"), ("date", DATE1),
      ("location", "https://www.example.com")],
     222),
    ("88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335"
     "dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
     [(":status", "200"), ("cache-control", "private"), ("date", DATE2),
      ("location", "https://www.example.com"), ("content-encoding", "gzip"),
      ("set-cookie", COOKIE)],
     215),
]


def test_rfc_requests_share_one_dynamic_table():
    decoder = Decoder()
    for block, headers, table in REQUESTS:
        assert decoder.decode(bytes.fromhex(block)) == headers
        assert decoder.table == table


def test_rfc_responses_evict_from_a_small_table():
    decoder = Decoder(max_table_size=256)
    for block, headers, size in RESPONSES:
        assert decoder.decode(bytes.fromhex(block)) == headers
        assert decoder.size == size
    assert decoder.table[0] == ("set-cookie", COOKIE) and len(decoder.table) == 3


def _huffman_encode(data: bytes) -> bytes:
    codes = hpack_lite.huffman_codes()
    value = bits = 0
    for byte in data:
        code, length = codes[byte]
        value, bits = (value << length) | code, bits + length
    pad = -bits % 8
    value, bits = (value << pad) | ((1 << pad) - 1), bits + pad
    return value.to_bytes(bits // 8, "big")


def test_huffman_round_trips_every_octet():
    data = bytes(range(256)) * 2
    assert hpack_lite.huffman_decode(_huffman_encode(data)) == data
    assert hpack_lite.huffman_decode(b"") == b""


def test_huffman_codes_match_the_rfc_examples():
    assert _huffman_encode(b"www.example.com").hex() == "f1e3c2e5f23a6ba0ab90f4ff"
    assert _huffman_encode(b"no-cache").hex() == "a8eb10649cbf"


@pytest.mark.parametrize("data", [
    bytes.fromhex("f1e3c2e5f23a6ba0ab90f400"),  # padding of zeros, not EOS's ones
    bytes.fromhex("f1e3c2e5f23a6ba0ab90f4ffff"),  # 8 bits or more of padding
    bytes.fromhex("ffffffff"),  # EOS itself
])
def test_huffman_refuses_bad_padding_and_eos(data):
    with pytest.raises(HpackError):
        hpack_lite.huffman_decode(data)


def test_huffman_table_is_the_hpack_librarys():
    constants = pytest.importorskip("hpack.huffman_constants")
    assert hpack_lite.huffman_codes() == list(zip(constants.REQUEST_CODES,
                                                  constants.REQUEST_CODES_LENGTH))


def test_static_table_is_the_hpack_librarys():
    table = pytest.importorskip("hpack.table")
    assert [(n.decode(), v.decode()) for n, v in table.HeaderTable.STATIC_TABLE] == \
        list(hpack_lite.STATIC_TABLE)


HEADERS = [(":method", "POST"), (":scheme", "http"), (":path", "/pyslurm_lite.v1.Controller/Ping"),
           (":authority", "127.0.0.1:6817"), ("content-type", "application/grpc"),
           ("te", "trailers"), ("x-pyslurm-user", "ana"), ("x-long", "v" * 300)]


def test_encoder_output_decodes_and_leaves_no_table_state():
    decoder = Decoder()
    block = hpack_lite.encode(HEADERS)
    assert decoder.decode(block) == HEADERS
    assert decoder.table == []
    assert block[:2] == b"\x83\x86"  # POST and http by static index


def test_encoder_output_decodes_with_the_hpack_library():
    hpack = pytest.importorskip("hpack")
    assert hpack.Decoder().decode(hpack_lite.encode(HEADERS)) == HEADERS


@pytest.mark.parametrize("value, prefix, encoded", [
    (10, 5, "0a"), (1337, 5, "1f9a0a"), (42, 8, "2a"), (31, 5, "1f00"),  # RFC 7541 C.1
])
def test_integers(value, prefix, encoded):
    assert hpack_lite.encode_int(value, prefix).hex() == encoded
    assert Decoder._int(bytes.fromhex(encoded), 0, prefix) == (value, len(encoded) // 2)


@pytest.mark.parametrize("block", [
    "80",  # index 0
    "be",  # dynamic index 62 of an empty table
    "3fe21f",  # a table size update to 4097, above the 4096 we allow
    "0a",  # a literal whose name string is missing
    "4005616263",  # a name string cut short
    "1fffffffffff7f",  # an integer too large
])
def test_malformed_blocks_are_refused(block):
    with pytest.raises(HpackError):
        Decoder().decode(bytes.fromhex(block))


def test_table_size_update_evicts():
    decoder = Decoder()
    decoder.decode(bytes.fromhex(REQUESTS[0][0]))
    assert decoder.table
    decoder.decode(bytes.fromhex("20"))  # size update to 0
    assert decoder.table == [] and decoder.size == 0
