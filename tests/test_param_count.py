"""Static parameter counts of torch layers and hand-written modules, checked against torch.

Every case in ``COUNTED`` is a self-contained snippet that ends by binding ``model``. The
static count (``analysis.training.param_count``, astroid only) must equal the number written in the
case; where torch is installed (an optional test dependency, never imported by the plugin),
``test_static_count_matches_torch`` also builds the snippet on the ``meta`` device and checks
``sum(p.numel() for p in model.parameters())``. ``UNKNOWN`` cases must count as None.
The module shapes are written for these tests (an MLP, a ResNet-style ``_make_layer``, the
Annotated Transformer's ``clones`` helper, a ViT-style class token), not copied.
"""
from __future__ import annotations

import textwrap
from typing import Optional

import pytest
from astroid import nodes

from flake8_torch_preflight.analysis.training import param_count
from flake8_torch_preflight.analysis.setup.build import build_module

HEADER = "import argparse\nimport copy\nfrom collections import OrderedDict\nimport torch\nimport torch.nn as nn\n"

COUNTED = {
    # a bias-free head tied to its embedding: one parameter, counted once (10 * 4)
    "tied_weights": (textwrap.dedent("""
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)
                self.head = nn.Linear(4, 10, bias=False)
                self.head.weight = self.embed.weight
        model = LM()
    """), 40),
    # nanoGPT's layout: dict(...) of layers into a ModuleDict, the embedding tied from inside it
    "module_dict_from_dict_call_tied": (textwrap.dedent("""
        class GPT(nn.Module):
            def __init__(self, vocab=16, width=8, depth=2):
                super().__init__()
                self.transformer = nn.ModuleDict(dict(
                    wte=nn.Embedding(vocab, width),
                    h=nn.ModuleList([nn.Linear(width, width) for _ in range(depth)]),
                    ln_f=nn.LayerNorm(width),
                ))
                self.lm_head = nn.Linear(width, vocab, bias=False)
                self.transformer.wte.weight = self.lm_head.weight
        model = GPT()
    """), 16 * 8 + 2 * (8 * 8 + 8) + 2 * 8),
    # a factory picked from a table by a key known statically
    "factory_from_a_table": (textwrap.dedent("""
        def small(classes=2):
            return nn.Linear(4, classes)
        def large(classes=2):
            return nn.Linear(8, classes)
        TABLE = {"small": small, "large": large}
        name = "large"
        model = TABLE[name](classes=3)
    """), 8 * 3 + 3),
    # ----------------------------------------------------------------------- single layers
    "linear": ("model = nn.Linear(10, 5)", 55),
    "linear_no_bias_keywords": ("model = nn.Linear(in_features=3, out_features=7, bias=False)", 21),
    "bilinear": ("model = nn.Bilinear(4, 5, 6)", 6 * 4 * 5 + 6),
    "conv1d": ("model = nn.Conv1d(4, 8, 3)", 8 * 4 * 3 + 8),
    "conv2d_groups_no_bias": ("model = nn.Conv2d(16, 32, (3, 5), groups=4, bias=False)", 32 * 4 * 15),
    "conv2d_positional": ("model = nn.Conv2d(3, 64, 7, 2, 3, 1, 1, False)", 64 * 3 * 49),
    "conv3d": ("model = nn.Conv3d(2, 4, 3, padding=1)", 4 * 2 * 27 + 4),
    "conv_transpose2d_groups": ("model = nn.ConvTranspose2d(8, 16, 4, stride=2, groups=2)", 8 * 8 * 16 + 16),
    "conv_transpose3d": ("model = nn.ConvTranspose3d(3, 6, 2, bias=False)", 3 * 6 * 8),
    "batchnorm1d": ("model = nn.BatchNorm1d(12)", 24),
    "batchnorm2d_no_affine": ("model = nn.BatchNorm2d(12, affine=False)", 0),
    "batchnorm3d": ("model = nn.BatchNorm3d(5)", 10),
    "syncbatchnorm": ("model = nn.SyncBatchNorm(7)", 14),
    "instancenorm_affine": ("model = nn.InstanceNorm2d(6, affine=True)", 12),
    "instancenorm_default": ("model = nn.InstanceNorm1d(6)", 0),
    "layernorm": ("model = nn.LayerNorm(64)", 128),
    "layernorm_shape": ("model = nn.LayerNorm((4, 5))", 40),
    "layernorm_no_bias": ("model = nn.LayerNorm(64, bias=False)", 64),
    "layernorm_no_affine": ("model = nn.LayerNorm(64, elementwise_affine=False)", 0),
    "rmsnorm": ("model = nn.RMSNorm(32)", 32),
    "groupnorm": ("model = nn.GroupNorm(4, 16)", 32),
    "groupnorm_no_affine": ("model = nn.GroupNorm(4, 16, affine=False)", 0),
    "embedding": ("model = nn.Embedding(1000, 32, padding_idx=0)", 32000),
    "embedding_bag": ("model = nn.EmbeddingBag(100, 8, mode='sum')", 800),
    "prelu": ("model = nn.PReLU(num_parameters=8)", 8),
    "rnn": ("model = nn.RNN(10, 20, 2)", (20 * 10 + 20 * 20 + 40) + (20 * 20 + 20 * 20 + 40)),
    "rnn_positional_no_bias": ("model = nn.RNN(10, 20, 1, 'relu', False)", 20 * 10 + 20 * 20),
    "lstm_bidirectional": ("model = nn.LSTM(10, 20, num_layers=2, bidirectional=True)",
                           2 * (80 * 10 + 80 * 20 + 160) + 2 * (80 * 40 + 80 * 20 + 160)),
    "lstm_proj": ("model = nn.LSTM(10, 20, 2, proj_size=5, batch_first=True)",
                  (80 * 10 + 80 * 5 + 160 + 5 * 20) + (80 * 5 + 80 * 5 + 160 + 5 * 20)),
    "gru": ("model = nn.GRU(8, 16, num_layers=3, bias=False, bidirectional=True)",
            2 * (48 * 8 + 48 * 16) + 2 * 2 * (48 * 32 + 48 * 16)),
    "mha": ("model = nn.MultiheadAttention(64, 8)", 3 * 64 * 64 + 3 * 64 + 64 * 64 + 64),
    "mha_kdim_vdim_bias_kv": ("model = nn.MultiheadAttention(32, 4, kdim=16, vdim=8, add_bias_kv=True)",
                              32 * 32 + 32 * 16 + 32 * 8 + 96 + 32 * 32 + 32 + 64),
    "mha_no_bias": ("model = nn.MultiheadAttention(16, 2, bias=False)", 4 * 16 * 16),
    "encoder_layer": ("model = nn.TransformerEncoderLayer(64, 4, 128)",
                      (4 * 64 * 64 + 4 * 64) + (64 * 128 + 128 + 128 * 64 + 64) + 4 * 64),
    "encoder_layer_no_bias": ("model = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, bias=False)",
                              4 * 32 * 32 + 2 * 32 * 64 + 2 * 32),
    "decoder_layer": ("model = nn.TransformerDecoderLayer(32, 4, 64)",
                      2 * (4 * 32 * 32 + 4 * 32) + (2 * 32 * 64 + 64 + 32) + 6 * 32),
    "transformer_encoder": (
        "layer = nn.TransformerEncoderLayer(32, 4, 64)\n"
        "model = nn.TransformerEncoder(layer, num_layers=3, norm=nn.LayerNorm(32))",
        3 * ((4 * 32 * 32 + 4 * 32) + (2 * 32 * 64 + 64 + 32) + 4 * 32) + 64,
    ),
    "transformer_decoder": (
        "model = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 32), 2)",
        2 * (2 * (4 * 16 * 16 + 4 * 16) + (2 * 16 * 32 + 32 + 16) + 6 * 16),
    ),
    "transformer": (
        "model = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=64)",
        2 * ((4 * 32 * 32 + 4 * 32) + (2 * 32 * 64 + 64 + 32) + 4 * 32) + 64
        + 1 * (2 * (4 * 32 * 32 + 4 * 32) + (2 * 32 * 64 + 64 + 32) + 6 * 32) + 64,
    ),
    "parameter_free": ("model = nn.Sequential(nn.ReLU(), nn.GELU(), nn.Dropout(0.1), nn.MaxPool2d(2), nn.Flatten(), "
                       "nn.AdaptiveAvgPool2d(1), nn.Identity(), nn.Softmax(dim=-1), nn.CrossEntropyLoss())", 0),
    # ------------------------------------------------------------------------- containers
    "sequential_ordered_dict": (
        "model = nn.Sequential(OrderedDict([('fc', nn.Linear(4, 8)), ('act', nn.ReLU()), ('out', nn.Linear(8, 1))]))",
        4 * 8 + 8 + 8 + 1,
    ),
    "modulelist_comprehension": (
        "dims = [16, 32, 64, 10]\n"
        "model = nn.ModuleList([nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1)])",
        (16 * 32 + 32) + (32 * 64 + 64) + (64 * 10 + 10),
    ),
    "modulelist_generator": ("model = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))", 4 * 72),
    "modulelist_loop_append": (
        "model = nn.ModuleList()\nfor width in (8, 16):\n    model.append(nn.Linear(width, width))",
        72 + 272,
    ),
    "moduledict": ("model = nn.ModuleDict({'a': nn.Linear(2, 2), 'b': nn.Conv1d(1, 2, 3)})", 6 + 8),
    "moduledict_comprehension": (
        "model = nn.ModuleDict({name: nn.Linear(4, 4) for name in ['q', 'k', 'v']})", 3 * 20),
    "sequential_star_list": (
        "layers = []\nfor i in range(3):\n    layers += [nn.Linear(10, 10), nn.ReLU()]\nmodel = nn.Sequential(*layers)",
        3 * 110,
    ),
    # -------------------------------------------------------------------- custom modules
    "custom_with_defaults_and_constants": (
        textwrap.dedent("""
            HIDDEN = 128
            class MLP(nn.Module):
                def __init__(self, d_in=784, hidden=HIDDEN, n_out=10):
                    super().__init__()
                    self.fc1 = nn.Linear(d_in, hidden)
                    self.act = nn.ReLU()
                    self.fc2 = nn.Linear(hidden, n_out)
                def forward(self, x):
                    return self.fc2(self.act(self.fc1(x)))
            model = MLP(n_out=2)
        """),
        784 * 128 + 128 + 128 * 2 + 2,
    ),
    "custom_from_argparse_defaults": (
        textwrap.dedent("""
            parser = argparse.ArgumentParser()
            parser.add_argument("--hidden", type=int, default=64)
            parser.add_argument("--layers", type=int, default=3)
            args = parser.parse_args([])
            class Net(nn.Module):
                def __init__(self, hidden, layers):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(layers)])
            model = Net(args.hidden, args.layers)
        """),
        3 * (64 * 64 + 64),
    ),
    "nested_custom_modules": (
        textwrap.dedent("""
            class Block(nn.Module):
                def __init__(self, dim, mult=4):
                    super().__init__()
                    self.norm = nn.LayerNorm(dim)
                    self.ff = nn.Sequential(nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))
            class Net(nn.Module):
                def __init__(self, dim=32, depth=2):
                    super().__init__()
                    self.embed = nn.Embedding(100, dim)
                    self.blocks = nn.ModuleList()
                    for _ in range(depth):
                        self.blocks.append(Block(dim))
                    self.head = nn.Linear(dim, 100, bias=False)
            model = Net()
        """),
        100 * 32 + 2 * (64 + 32 * 128 + 128 + 128 * 32 + 32) + 32 * 100,
    ),
    "resnet_style_make_layer": (
        textwrap.dedent("""
            class BasicBlock(nn.Module):
                expansion = 1
                def __init__(self, inplanes, planes, stride=1, downsample=None):
                    super().__init__()
                    self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
                    self.bn1 = nn.BatchNorm2d(planes)
                    self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
                    self.bn2 = nn.BatchNorm2d(planes)
                    self.downsample = downsample
            class TinyResNet(nn.Module):
                def __init__(self, block=BasicBlock, layers=(2, 2), num_classes=10):
                    super().__init__()
                    self.inplanes = 16
                    self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
                    self.bn1 = nn.BatchNorm2d(16)
                    self.layer1 = self._make_layer(block, 16, layers[0])
                    self.layer2 = self._make_layer(block, 32, layers[1], stride=2)
                    self.fc = nn.Linear(32 * block.expansion, num_classes)
                def _make_layer(self, block, planes, blocks, stride=1):
                    downsample = None
                    if stride != 1 or self.inplanes != planes * block.expansion:
                        downsample = nn.Sequential(
                            nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                            nn.BatchNorm2d(planes * block.expansion),
                        )
                    layers = [block(self.inplanes, planes, stride, downsample)]
                    self.inplanes = planes * block.expansion
                    for _ in range(1, blocks):
                        layers.append(block(self.inplanes, planes))
                    return nn.Sequential(*layers)
            model = TinyResNet()
        """),
        None,  # checked against torch only
    ),
    "annotated_transformer_clones": (
        textwrap.dedent("""
            def clones(module, n):
                return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])
            class Encoder(nn.Module):
                def __init__(self, layer, n):
                    super().__init__()
                    self.layers = clones(layer, n)
                    self.norm = nn.LayerNorm(16)
            model = Encoder(nn.Linear(16, 16), 6)
        """),
        6 * 272 + 32,
    ),
    "shared_layer_counts_once": (
        textwrap.dedent("""
            class Siamese(nn.Module):
                def __init__(self):
                    super().__init__()
                    shared = nn.Linear(8, 8)
                    self.left = nn.Sequential(shared, nn.ReLU())
                    self.right = nn.Sequential(shared, nn.Tanh())
            model = Siamese()
        """),
        72,
    ),
    "plain_list_is_not_registered": (
        textwrap.dedent("""
            class Forgetful(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = [nn.Linear(4, 4) for _ in range(3)]
                    self.out = nn.Linear(4, 1)
            model = Forgetful()
        """),
        5,
    ),
    "subclass_with_super_arguments": (
        textwrap.dedent("""
            class Base(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.fc = nn.Linear(width, width)
            class Child(Base):
                def __init__(self):
                    super().__init__(width=12)
                    self.extra = nn.Linear(12, 1)
            model = Child()
        """),
        156 + 13,
    ),
    "subclass_of_a_torch_layer": (
        textwrap.dedent("""
            class ScaledLinear(nn.Linear):
                def __init__(self, d_in, d_out, scale=2.0):
                    super().__init__(d_in, d_out, bias=False)
                    self.scale = scale
            model = ScaledLinear(6, 4)
        """),
        24,
    ),
    "parameters_and_conditions": (
        textwrap.dedent("""
            class ViTStub(nn.Module):
                def __init__(self, dim=32, patches=16, use_head=True):
                    super().__init__()
                    self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
                    self.pos = nn.Parameter(torch.randn(1, patches + 1, dim) * 0.02)
                    self.register_buffer("mask", torch.ones(patches))
                    self.scale = dim ** -0.5
                    if use_head:
                        self.head = nn.Linear(dim, 10)
                    else:
                        self.head = nn.Identity()
                    for m in self.modules():
                        if isinstance(m, nn.Linear):
                            nn.init.zeros_(m.bias)
            model = ViTStub()
        """),
        32 + 17 * 32 + 330,
    ),
    "add_module_and_register_parameter": (
        textwrap.dedent("""
            class Dyn(nn.Module):
                def __init__(self, n=3):
                    super().__init__()
                    for i in range(n):
                        self.add_module(f"fc{i}", nn.Linear(2, 2))
                    self.register_parameter("gain", nn.Parameter(torch.ones(5)))
            model = Dyn()
        """),
        3 * 6 + 5,
    ),
    "examples_bad_train_classifier": (
        textwrap.dedent("""
            VOCAB = 32000
            WIDTH = 4096
            class Classifier(nn.Module):
                def __init__(self, vocab=VOCAB, width=WIDTH, depth=8, n_classes=10):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width)
                    self.blocks = nn.ModuleList(
                        [nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
                         for _ in range(depth)]
                    )
                    self.norm = nn.LayerNorm(width)
                    self.head = nn.Linear(width, n_classes)
            model = Classifier()
        """),
        1_205_026_826,
    ),
}

UNKNOWN = {
    "lazy_layer": "model = nn.LazyLinear(10)",
    "size_from_an_unknown_value": "import os\nmodel = nn.Linear(int(os.environ['D']), 2)",
    "tied_weights_with_a_bias": textwrap.dedent("""
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)
                self.head = nn.Linear(4, 10)
                self.head.weight = self.embed.weight
        model = LM()
    """),
    "weight_replaced_inside_a_container": textwrap.dedent("""
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.parts = nn.ModuleDict(dict(head=nn.Linear(4, 10)))
                self.parts.head.weight = nn.Parameter(torch.zeros(10, 4))
        model = LM()
    """),
    "opaque_factory": "from blocks import make_activation\nmodel = nn.Sequential(make_activation(), nn.Linear(2, 2))",
    "unknown_loop_registers": textwrap.dedent("""
        class Net(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                self.layers = nn.ModuleList()
                for s in sizes:
                    self.layers.append(nn.Linear(s, s))
        model = Net(load_sizes())
    """),
    "unknown_condition_registers": textwrap.dedent("""
        import random
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                if random.random() > 0.5:
                    self.fc = nn.Linear(4, 4)
        model = Net()
    """),
    "argparse_without_default": textwrap.dedent("""
        parser = argparse.ArgumentParser()
        parser.add_argument("--hidden", type=int)
        args = parser.parse_args([])
        model = nn.Linear(args.hidden, 2)
    """),
    "unreadable_base_class": textwrap.dedent("""
        from somewhere import Backbone
        class Net(Backbone):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
        model = Net()
    """),
}


def static_count(body: str) -> Optional[int]:
    source = HEADER + body + "\n"
    module = build_module(source, "count_case.py")
    assigns = [n for n in module.body if isinstance(n, nodes.Assign)
               and any(isinstance(t, nodes.AssignName) and t.name == "model" for t in n.targets)]
    assert assigns, "each case binds model"
    return param_count.count_params(assigns[-1].value) if len(assigns) == 1 and not _mutated(module) else \
        _count_of_mutated(module)


def _mutated(module: nodes.Module) -> bool:
    return any(isinstance(n, nodes.For) for n in module.body)


def _count_of_mutated(module: nodes.Module) -> Optional[int]:
    """Cases that build ``model`` over several module-level statements: interpret them all."""
    counter = param_count._Counter()
    env: dict = {}
    try:
        counter._run_block(module.body, env)
    except param_count.GiveUp:
        return None
    value = env.get("model")
    return value.params if isinstance(value, param_count.ModuleValue) else None


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_static_count(name: str) -> None:
    body, expected = COUNTED[name]
    count = static_count(body)
    assert count is not None, name
    if expected is not None:
        assert count == expected


@pytest.mark.parametrize("name", sorted(UNKNOWN))
def test_unknown_counts_are_none(name: str) -> None:
    assert static_count(UNKNOWN[name]) is None


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_static_count_matches_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    body, _ = COUNTED[name]
    namespace: dict = {}
    with torch.device("meta"):
        exec(compile(HEADER + body + "\n", name, "exec"), namespace)  # the test's own snippet
    model = namespace["model"]
    expected = sum(p.numel() for p in model.parameters())
    assert static_count(body) == expected


def test_class_params_uses_constructor_defaults() -> None:
    module = build_module(HEADER + "class Net(nn.Module):\n    def __init__(self, d=8):\n        super().__init__()\n"
                          "        self.fc = nn.Linear(d, d)\n", "count_case.py")
    cls = next(n for n in module.body if isinstance(n, nodes.ClassDef))
    assert param_count.class_params(cls) == 72


def test_external_counts_fill_catalogue_models() -> None:
    body = textwrap.dedent("""
        from transformers import AutoModel
        class Wrapper(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = AutoModel.from_pretrained("bert-base-uncased")
                self.head = nn.Linear(768, 2)
        model = Wrapper()
    """)
    module = build_module(HEADER + body, "count_case.py")
    call = module.body[-1].value
    assert param_count.count_params(call) is None
    assert param_count.count_params(call, external=lambda c: 1000) == 1000 + 768 * 2 + 2
