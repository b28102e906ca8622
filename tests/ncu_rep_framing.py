"""The .ncu-rep framing, written by tests that build damaged reports (hostile input, bombs)."""

from __future__ import annotations

import struct


def ncu_rep_block(payload_size: int) -> bytes:
    """One framing block: [u32 header size][BlockHeader with PayloadSize (field 5, varint)]."""
    value, varint = payload_size, bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        varint.append(byte | (0x80 if value else 0))
        if not value:
            break
    header = bytes([5 << 3]) + bytes(varint)
    return struct.pack("<I", len(header)) + header
