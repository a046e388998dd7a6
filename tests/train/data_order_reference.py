"""runtime/train/data_order.cpp's epochOrder written again in Python from
its description (SplitMix64, Fisher-Yates, rejection of the biased tail):
the golden order in tests/runtime/train_data_order.cpp comes from here.

    python3 tests/train/data_order_reference.py ROWS SEED EPOCH
"""
import sys

MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, state):
        self.state = state

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, bound):
        limit = MASK - MASK % bound
        while True:
            x = self.next()
            if x < limit:
                return x % bound


def epoch_order(rows, seed, epoch):
    order = list(range(rows))
    rng = SplitMix64(SplitMix64(seed).next() ^ ((epoch * 0xD1B54A32D192ED03) & MASK))
    for i in range(rows, 1, -1):
        j = rng.below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


if __name__ == "__main__":
    rows, seed, epoch = (int(a) for a in sys.argv[1:4])
    print(", ".join(str(i) for i in epoch_order(rows, seed, epoch)))
