"""A client process for test_s3_robustness: streams a signed 1 GiB
UNSIGNED-PAYLOAD PUT forever-ish and records how many bytes it has sent, so
the test can SIGKILL it mid-upload."""
import s3helpers as h
from test_s3_robustness import GiB, start_big_put


def main(port, bucket, key, progress_path):
    s = start_big_put(port, bucket, key, total=GiB)
    block = h.pattern_block("big-upload", 1 << 20)
    sent = 0
    while sent < GiB:
        s.sendall(block)
        sent += len(block)
        if sent % (16 << 20) == 0:
            with open(progress_path + ".tmp", "w") as f:
                f.write(str(sent))
            import os
            os.replace(progress_path + ".tmp", progress_path)
