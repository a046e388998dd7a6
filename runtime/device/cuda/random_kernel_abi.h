/* The device's random-values kernel (random_fill.cu) as random_kernel.cpp
   launches it: its name and its element types. Plain C, for nvcc and C++.
     linnet_random_fill(void* out, uint64 count, uint64 key, double base,
                        double std, uint32 type)
   writes element e < count of `out` as random_value::at(key, e, base, std),
   rounded to `type` once (nearest even). */
#ifndef LINNET_RANDOM_KERNEL_ABI_H
#define LINNET_RANDOM_KERNEL_ABI_H

#define LINNET_RANDOM_KERNEL "linnet_random_fill"
#define LINNET_RANDOM_F32 0
#define LINNET_RANDOM_BF16 1
#define LINNET_RANDOM_F16 2
#define LINNET_RANDOM_F64 3

#endif
