"""Measure per-sample activations of torchvision-architecture CNNs, as CUDA keeps them.

Regenerates ``activations_cnn.json``. Usage: ``python tests/calibration/measure_cnn.py``.

torchvision from PyPI does not import beside the local CPU build of torch 2.13, so the
architectures are re-stated here, module for module, from torchvision 0.2x's ``resnet.py``,
``vgg.py`` and ``alexnet.py`` (same layer order, channel widths, strides, paddings, in-place ReLU,
``out += identity``, dropout placement). ``parameter_count`` in the fixture equals torchvision's
published count for each (checked below against the catalogue), which pins that the re-statement
has the same layers.

Same capture as the transformer families (``_harness.py``): FakeTensorMode on ``cuda:0``, one
training forward with ``cross_entropy``, saved storages deduplicated, parameters/buffers and
their casts excluded, the batch excluded. Activations are exactly linear in the batch (checked at
b = 2, 4, 8); per-sample bytes at the native 224 px are recorded per precision, plus the ratio
to the ``(image/224)^2`` scaling the cost model uses at 160, 192, 256 and 320 px.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable

import torch
from torch import nn

import _harness as H

# ------------------------------------------------------------------------ torchvision re-statement


def _conv3x3(cin: int, cout: int, stride: int = 1, groups: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, groups=groups, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64) -> None:
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64) -> None:
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = _conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width, stride, groups)  # ResNet v1.5: stride on the 3x3
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision's ResNet; ``deep_stem`` (a width) and ``avg_down`` re-state timm's ResNet-D
    (timm ``resnet.py``, ``resnet50d``: ``stem_type='deep', stem_width=32, avg_down=True``): three
    3x3 convolutions 3 -> w -> w -> 64 with batch norm and ReLU between them, and shortcut
    downsampling by a 2x2 average pool (``ceil_mode=True, count_include_pad=False``) before a
    stride-1 1x1 convolution."""

    def __init__(self, block: Any, layers: list[int], num_classes: int = 1000, groups: int = 1,
                 width_per_group: int = 64, deep_stem: int = 0, avg_down: bool = False) -> None:
        super().__init__()
        self.inplanes, self.groups, self.base_width = 64, groups, width_per_group
        self.avg_down = avg_down
        if deep_stem:
            w = deep_stem
            self.conv1: nn.Module = nn.Sequential(
                nn.Conv2d(3, w, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True),
                nn.Conv2d(w, w, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True),
                nn.Conv2d(w, 64, 3, stride=1, padding=1, bias=False))
        else:
            self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block: Any, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            if self.avg_down:
                pool: nn.Module = (nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
                                   if stride != 1 else nn.Identity())
                downsample = nn.Sequential(pool, _conv1x1(self.inplanes, planes * block.expansion),
                                           nn.BatchNorm2d(planes * block.expansion))
            else:
                downsample = nn.Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                           nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width)
                   for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


_VGG_CFG = {
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}


class VGG(nn.Module):
    def __init__(self, cfg: list[Any], batch_norm: bool, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers.append(nn.Conv2d(cin, v, kernel_size=3, padding=1))
                if batch_norm:
                    layers.append(nn.BatchNorm2d(v))
                layers.append(nn.ReLU(inplace=True))
                cin = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=0.5),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=0.5), nn.Linear(4096, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


#: catalogue key -> builder (torchvision constructor arguments)
MODELS: dict[str, Callable[[], nn.Module]] = {
    "resnet18": lambda: ResNet(BasicBlock, [2, 2, 2, 2]),
    "resnet34": lambda: ResNet(BasicBlock, [3, 4, 6, 3]),
    "resnet50": lambda: ResNet(Bottleneck, [3, 4, 6, 3]),
    "resnet101": lambda: ResNet(Bottleneck, [3, 4, 23, 3]),
    "resnet152": lambda: ResNet(Bottleneck, [3, 8, 36, 3]),
    "resnext50-32x4d": lambda: ResNet(Bottleneck, [3, 4, 6, 3], groups=32, width_per_group=4),
    "wide-resnet50-2": lambda: ResNet(Bottleneck, [3, 4, 6, 3], width_per_group=128),
    "resnet50d": lambda: ResNet(Bottleneck, [3, 4, 6, 3], deep_stem=32, avg_down=True),  # timm
    "vgg16": lambda: VGG(_VGG_CFG["vgg16"], False),
    "vgg16-bn": lambda: VGG(_VGG_CFG["vgg16"], True),
    "vgg19": lambda: VGG(_VGG_CFG["vgg19"], False),
    "alexnet": lambda: AlexNet(),
}

PRECISIONS: dict[str, dict[str, Any]] = {
    "fp32": {"amp": None, "cast": None},
    "amp": {"amp": torch.float16, "cast": None},
    "bf16": {"amp": None, "cast": torch.bfloat16},
}


def _forward(model: nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return nn.functional.cross_entropy(model(inputs["pixel_values"]), inputs["labels"])


def run_point(name: str, b: int, image: int, prec: str) -> dict[str, Any]:
    spec = PRECISIONS[prec]
    with H.fake_mode("cuda"):
        prev = torch.get_default_dtype()
        torch.set_default_dtype(spec["cast"] or torch.float32)
        try:
            model = MODELS[name]()
        finally:
            torch.set_default_dtype(prev)
        params = sum(p.numel() for p in model.parameters())
        x = torch.randn(b, 3, image, image, dtype=spec["cast"] or torch.float32)
        cap = H.measure(model, {"pixel_values": x, "labels": torch.randint(0, 1000, (b,))},
                        _forward, spec["amp"], "cuda")
    return {**cap.summary(), "params": params, "by_dtype": cap.by_dtype()}


def main(argv: list[str]) -> None:
    names = argv or list(MODELS)
    H.install_fake_cuda()
    out: dict[str, Any] = {}
    for name in names:
        t0 = time.time()
        entry: dict[str, Any] = {}
        for prec in PRECISIONS:
            pts = {b: run_point(name, b, 224, prec) for b in (2, 4, 8)}
            per = (pts[4]["activation_bytes"] - pts[2]["activation_bytes"]) // 2
            linear = all(pts[b]["activation_bytes"] == per * b + (pts[2]["activation_bytes"] - 2 * per)
                         for b in pts)
            const = pts[2]["activation_bytes"] - 2 * per
            scaling = {}
            for image in ((160, 192, 256, 320) if prec == "fp32" else ()):
                p2 = run_point(name, 2, image, prec)["activation_bytes"]
                p4 = run_point(name, 4, image, prec)["activation_bytes"]
                per_i = (p4 - p2) // 2
                scaling[str(image)] = {"per_sample_bytes": per_i,
                                       "ratio_to_square_scaling": round(per_i / (per * (image / 224) ** 2), 4)}
            entry[prec] = {
                "per_sample_bytes_224": per,
                "batch_independent_bytes": const,
                "linear_in_batch": linear,
                "weight_copy_bytes": pts[2]["weight_copy_bytes"],
                "by_dtype_b2": pts[2]["by_dtype"],
                "image_scaling": scaling,
            }
        fp32 = entry["fp32"]["per_sample_bytes_224"]
        out[name] = {
            "parameter_count": pts[2]["params"],
            "activation_elements_per_sample": fp32 // 4,
            "amp_bytes_per_element": round(entry["amp"]["per_sample_bytes_224"] / (fp32 // 4), 4),
            "precisions": entry,
        }
        print(f"{name}: params {pts[2]['params']:,} per-sample fp32 {fp32:,} B "
              f"({fp32 // 4:,} elements), amp {entry['amp']['per_sample_bytes_224']:,} B, "
              f"bf16 {entry['bf16']['per_sample_bytes_224']:,} B ({time.time() - t0:.0f}s)", flush=True)
    payload = {
        "version": 1,
        "kind": "activations-cnn",
        "note": (
            f"MEASURED {H.today()} with torch {H.versions()['torch']} by tests/calibration/measure_cnn.py: "
            "torchvision architectures re-stated in the script (torchvision does not import beside the "
            "CPU build); saved-tensor bytes of one training forward with cross_entropy, FakeTensorMode on "
            "cuda:0 of a CPU-only build (CUDA autocast op lists, fused dropout bool masks), storages "
            "deduplicated, parameters/buffers/weight casts and the input batch excluded. 'amp' = fp32 "
            "weights under CUDA fp16 autocast; 'bf16' = weights and input cast to bf16. No GPU was used."
        ),
        "tolerance": {"bytes_rel": 0.001, "elements_rel": 0.0,
                      "why": "exact integer measurements; 0.1% for decimal round-off in the cost model"},
        "image_size": 224,
        "models": out,
    }
    path = H.HERE / "activations_cnn.json"
    if argv and path.exists():  # a partial run updates the listed models only
        payload["models"] = {**json.loads(path.read_text())["models"], **out}
    path = H.write_fixture("activations_cnn", payload)
    print(f"wrote {path.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
