"""The PyTorch Lightning and Hugging Face Trainer callbacks, on tiny real trainings on the CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from suanli.probe import Probe
from tests.probe._need import need
from tests.probe._otlp import by_name, read_spans

torch = need("torch")


def _children(spans: list[dict[str, Any]]) -> dict[str, list[str]]:
    steps = {s["spanId"]: s for s in by_name(spans, "train_step")}
    kids: dict[str, list[str]] = {sid: [] for sid in steps}
    for s in sorted(spans, key=lambda s: s["start"]):
        parent = steps.get(s.get("parentSpanId", ""))
        if parent is not None:
            assert parent["start"] <= s["start"] <= s["end"] <= parent["end"]
            kids[s["parentSpanId"]].append(s["name"])
    return kids


def test_lightning_callback(tmp_path: Path) -> None:
    pl = need("lightning.pytorch")
    from suanli.probe.torch.lightning import SuanliLightningCallback

    class Tiny(pl.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.TensorDataset(torch.randn(24, 8), torch.randn(24, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    path = tmp_path / "t.jsonl"
    probe = Probe(job_id="pl", rank=0, file=str(path), flops_per_token=54.0)
    trainer = pl.Trainer(max_steps=5, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[SuanliLightningCallback(probe, tokens_per_batch=lambda b: len(b[0]))],
                         default_root_dir=str(tmp_path))
    trainer.fit(Tiny(), loader)
    probe.close()
    spans = read_spans(path)
    steps = by_name(spans, "train_step")
    assert [s["attrs"] for s in steps] == [
        {"train.step": i, "train.tokens": 4, "train.model_flops": 216.0} for i in range(5)]
    assert all(k == ["forward", "backward", "optimizer"] for k in _children(spans).values())


def test_hugging_face_trainer_callback(tmp_path: Path) -> None:
    transformers = need("transformers")
    from suanli.probe.torch.hf import SuanliTrainerCallback

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(8, 1)

        def forward(self, x: Any, labels: Any = None) -> dict[str, Any]:
            out = self.net(x)
            return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

    rows = [{"x": torch.randn(8), "labels": torch.randn(1)} for _ in range(32)]
    path = tmp_path / "t.jsonl"
    probe = Probe(job_id="hf", rank=0, file=str(path))
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=4,
        gradient_accumulation_steps=2, report_to=[], save_strategy="no", use_cpu=True,
        disable_tqdm=True, logging_strategy="no", dataloader_num_workers=0)
    trainer = transformers.Trainer(model=Tiny(), args=args, train_dataset=rows,
                                   callbacks=[SuanliTrainerCallback(probe, tokens_per_step=8)])
    trainer.train()
    probe.close()
    spans = read_spans(path)
    steps = by_name(spans, "train_step")
    assert [s["attrs"]["train.step"] for s in steps] == [0, 1, 2, 3]
    assert all(s["attrs"]["train.tokens"] == 8 for s in steps)
    # two micro-batches per optimizer step (gradient accumulation)
    want = ["forward", "backward", "forward", "backward", "optimizer"]
    assert all(k == want for k in _children(spans).values())
