"""The reference model runs hundreds of tiny ops per token: one thread is faster than two."""

import torch

torch.set_num_threads(1)
