"""f32 .npy files without numpy, for the `linnet call` tests and timing.

  npy.py write PATH N   writes [N] f32 values 0, 0.5, 1, ... (k % 1000 / 2)
  npy.py read PATH      prints the values, one line
  npy.py ids PATH 5,64  writes token ids as i32 [1, n]
"""
import struct
import sys


def write(path, n):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % n, *[(k % 1000) * 0.5 for k in range(n)]))


def ids(path, values):
    v = [int(x) for x in values.split(",")]
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, %d), }" % len(v)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%di" % len(v), *v))


def read(path):
    data = open(path, "rb").read()
    length = struct.unpack("<H", data[8:10])[0]
    body = data[10 + length:]
    print(list(struct.unpack("<%df" % (len(body) // 4), body)))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "ids":
        ids(sys.argv[2], sys.argv[3])
    else:
        read(sys.argv[2])
