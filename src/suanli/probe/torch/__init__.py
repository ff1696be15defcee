"""suanli.probe.torch: the PyTorch side of the probe (needs torch).

* :func:`attach_ddp`: a DDP communication hook timing each gradient bucket's all-reduce;
* :func:`default_timer`: CUDA events when CUDA is there (read lazily), else the wall clock;
* :func:`model_flops_per_token`: model FLOPs per token from a module's parameters and shape;
* callbacks for PyTorch Lightning (``suanli.probe.torch.lightning``) and the Hugging Face
  Trainer (``suanli.probe.torch.hf``), each imported only when used.
"""

from suanli.probe.torch.cuda import CudaEventTimer, anchored_ns, default_timer
from suanli.probe.torch.ddp import attach_ddp
from suanli.probe.torch.model import count_params, model_flops_per_token

__all__ = ["CudaEventTimer", "anchored_ns", "attach_ddp", "count_params", "default_timer",
           "model_flops_per_token"]
