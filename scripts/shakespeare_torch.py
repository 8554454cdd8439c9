"""shakespeare_torch.py: the shakespeare model as a PyTorch module, a checkpoint loader and saver.

The C trainer's model is exactly

    Embedding(V, E) -> CELL(E, H, num_layers=L, batch_first=True, dropout=p)
                    -> Dropout(p) -> Linear(H, V) -> cross-entropy (mean over B*T)

with CELL nn.LSTM (--cell lstm, the default), nn.GRU (gru) or nn.RNN with tanh (rnn), and its
checkpoints (<name>.safetensors) store the parameters under this module's state_dict names and
shapes, <p> the cell's module name (lstm, gru, rnn) and G its gates (4, 3, 1; CELLS below,
as include/shakespeare/cell.h):

    embedding.weight      (V, E)
    <p>.weight_ih_l{k}    (G*H, E or H)    gate rows in PyTorch's order (LSTM i, f, g, o; GRU r, z, n)
    <p>.weight_hh_l{k}    (G*H, H)
    <p>.bias_ih_l{k}      (G*H,)
    <p>.bias_hh_l{k}      (G*H,)
    fc.weight             (V, H)
    fc.bias               (V,)

The metadata "cell" names the cell (absent: lstm).

so a checkpoint loads with load_state_dict(strict=True):

    from shakespeare_torch import load_checkpoint
    model, meta = load_checkpoint("out/model.safetensors")   # meta["vocab"]: code points
    logits, state = model(torch.tensor([token_ids(meta, "To be")]))

A model trained with --vocab bytes has meta["vocab_mode"] == "bytes": its vocabulary holds byte
values, and token_ids(meta, b"...") maps bytes (NUL and invalid UTF-8 included).

A model trained now begins its texts after a newline: meta["start_context"] == "\n" (empty for
files written before, which begin from a zero state). shakespeare-sample feeds it before a
prime, and --score before the text, so that every character is predicted; score() does the same:

    nll_sum, count = score(model, meta, open("held.txt").read())   # --score's mean: nll_sum / count

and a CharLSTM trained in PyTorch saves as a file that shakespeare-sample and
shakespeare-train --init-from load:

    from shakespeare_torch import save_checkpoint
    save_checkpoint(model, vocab, "torch.safetensors")   # vocab: sorted code points (or a str)
    save_checkpoint(model, sorted(set(data)), "b.safetensors", vocab_mode="bytes")  # data: bytes

Run as a script it loads a checkpoint and prints its configuration:

    /usr/bin/python3 scripts/shakespeare_torch.py out/model.safetensors

The safetensors reader and writer are the `safetensors` package when it is importable, else the
small pure-Python ones below (the format: u64 LE header length, JSON header, raw LE data).
Both writers give files with the same content, hence the same checksum (content_checksum).
"""

import json
import os
import struct
import sys
import tempfile
import zlib

import torch
import torch.nn as nn


# The cells, as include/shakespeare/cell.h's table: name -> (the torch.nn module's constructor,
# the module's name in the state_dict, gates G).
CELLS = {
    "lstm": (nn.LSTM, "lstm", 4),
    "gru": (nn.GRU, "gru", 3),
    "rnn": (nn.RNN, "rnn", 1),  # nonlinearity="tanh", nn.RNN's default
}


class CharRNN(nn.Module):
    """Character-level language model of a recurrent cell; forward(x, state) -> (logits, state).

    cell: "lstm" (nn.LSTM), "gru" (nn.GRU), "rnn" (nn.RNN, tanh): CELLS.
    x: (B, T) int64 token ids. state: None (zeros), or the module's: a tuple (h, c) for the LSTM,
    h for the others, each (L, B, H). logits: (B, T, V). Dropout p acts between layers and
    before fc, in training only.
    """

    def __init__(self, vocab_size, embed_size, hidden_size, num_layers, dropout=0.0, cell="lstm"):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}, got {cell!r}")
        self.vocab_size = vocab_size
        self.embed_size = embed_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout_p = dropout
        self.cell = cell
        make, self.cell_name, _ = CELLS[cell]
        self.embedding = nn.Embedding(vocab_size, embed_size)
        # The modules warn when dropout > 0 with a single layer; it has no effect there anyway.
        setattr(self, self.cell_name, make(embed_size, hidden_size, num_layers=num_layers, batch_first=True,
                                           dropout=dropout if num_layers > 1 else 0.0))
        self.drop = nn.Dropout(dropout)  # no parameters: not in the state_dict
        self.fc = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, state=None):
        emb = self.embedding(x)                                  # (B, T, E)
        out, state = getattr(self, self.cell_name)(emb, state)   # (B, T, H); state (L, B, H) each
        logits = self.fc(self.drop(out))                         # (B, T, V)
        return logits, state

    def loss(self, logits, y):
        """Mean cross-entropy over B*T positions, as the C trainer reports it."""
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


CharLSTM = CharRNN  # the name before the cells: CharLSTM(V, E, H, L) is the LSTM model


# ---- safetensors -------------------------------------------------------------------------

_DTYPES = {"F32": (torch.float32, "f", 4), "F64": (torch.float64, "d", 8),
           "I32": (torch.int32, "i", 4), "I64": (torch.int64, "q", 8)}


def _read_safetensors_pure(path):
    """Pure-Python safetensors reader: (dict name -> tensor, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors file ({len(blob)} bytes)")
    (hlen,) = struct.unpack_from("<Q", blob, 0)
    if hlen > len(blob) - 8:
        raise ValueError(f"{path}: header length {hlen} exceeds the file size {len(blob)}")
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = memoryview(blob)[8 + hlen:]
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        tdtype, code, size = _DTYPES[info["dtype"]]
        shape = [int(d) for d in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        numel = 1
        for d in shape:
            numel *= d
        if not (0 <= begin <= end <= len(data)) or end - begin != numel * size:
            raise ValueError(f"{path}: tensor {name} has bad data offsets {begin}..{end}")
        try:
            import numpy as np
            arr = np.frombuffer(data[begin:end], dtype="<" + code).copy()
            t = torch.from_numpy(arr)
        except ImportError:
            t = torch.tensor(struct.unpack_from(f"<{numel}{code}", data, begin), dtype=tdtype)
        tensors[name] = t.to(tdtype).reshape(shape)
    return tensors, meta


def _tensor_le_bytes(t):
    """The tensor's elements as little-endian bytes, row-major (what safetensors stores)."""
    code = {v[0]: v[1] for v in _DTYPES.values()}[t.dtype]
    t = t.detach().cpu().contiguous()
    try:
        import numpy as np
        return t.numpy().astype("<" + code, copy=False).tobytes()
    except ImportError:
        flat = t.reshape(-1).tolist()
        return struct.pack(f"<{len(flat)}{code}", *flat)


def _dtype_name(t):
    for name, (tdtype, _, _) in _DTYPES.items():
        if t.dtype == tdtype:
            return name
    raise ValueError(f"unsupported tensor dtype {t.dtype}")


def _write_safetensors_pure(path, tensors, metadata):
    """Pure-Python safetensors writer, laid out as the safetensors library lays it out: tensors
    in name order, a compact JSON header padded with spaces to a multiple of 8 bytes."""
    header = {} if metadata is None else {"__metadata__": dict(metadata)}
    chunks, offset = [], 0
    for name in sorted(tensors):
        data = _tensor_le_bytes(tensors[name])
        header[name] = {"dtype": _dtype_name(tensors[name]), "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in chunks:
            f.write(data)


def write_safetensors(path, tensors, metadata, writer="auto"):
    """Writes tensors (dict name -> tensor) and metadata (dict of strings, or None for none) as a safetensors file,
    atomically (a temporary file in the same directory, then a rename).
    writer: "safetensors" (the package), "python" (the pure-Python writer) or "auto" (the
    package when it is importable)."""
    if writer not in ("auto", "safetensors", "python"):
        raise ValueError(f"writer must be auto, safetensors or python, got {writer!r}")
    save_file = None
    if writer != "python":
        try:
            from safetensors.torch import save_file
        except ImportError:
            if writer == "safetensors":
                raise
    tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        if save_file is not None:
            save_file(tensors, tmp, metadata=None if metadata is None else dict(metadata))
        else:
            _write_safetensors_pure(tmp, tensors, metadata)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp made it private; a model file is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def content_checksum(tensors, metadata):
    """The model file's checksum (format shakespeare-lstm-2), "crc32:%08x", over the content in
    the canonical form of include/shakespeare/model_file.h: the metadata but "checksum" sorted
    by key, then the tensors' names, dtypes, shapes and bytes sorted by name; every string and
    every tensor's bytes preceded by its length (u64 LE)."""
    def u64(v):
        return struct.pack("<Q", v)

    def string(b):
        return u64(len(b)) + b

    items = sorted((k.encode("utf-8"), v.encode("utf-8")) for k, v in metadata.items() if k != "checksum")
    crc = zlib.crc32(u64(len(items)))
    for k, v in items:
        crc = zlib.crc32(string(k) + string(v), crc)
    names = sorted(tensors, key=lambda n: n.encode("utf-8"))
    crc = zlib.crc32(u64(len(names)), crc)
    for name in names:
        t = tensors[name]
        data = _tensor_le_bytes(t)
        head = string(name.encode("utf-8")) + string(_dtype_name(t).encode("ascii")) + u64(t.dim())
        head += b"".join(u64(d) for d in t.shape) + u64(len(data))
        crc = zlib.crc32(data, zlib.crc32(head, crc))
    return f"crc32:{crc:08x}"


def read_safetensors(path):
    """(dict name -> tensor, metadata dict of strings) of a safetensors file."""
    try:
        from safetensors import safe_open
    except ImportError:
        return _read_safetensors_pure(path)
    tensors = {}
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
        for name in f.keys():
            tensors[name] = f.get_tensor(name)
    return tensors, meta


FORMAT = "shakespeare-lstm-2"   # what save_checkpoint writes (checksum over the content)
FORMAT_V1 = "shakespeare-lstm-1"  # older files (checksum over the data section as stored)
REQUIRED_METADATA = ("vocab", "vocab_size", "embed_size", "hidden_size", "num_layers")
VOCAB_MODES = ("utf8", "bytes")  # metadata vocab_mode: code points (absent: utf8) or byte values


def load_checkpoint(path, dropout=None):
    """Builds a CharRNN from a shakespeare checkpoint: (model in eval mode, metadata).

    metadata has the raw strings plus, parsed: vocab_size, embed_size, hidden_size,
    num_layers, dropout (ints / float), cell ("lstm" also when the file has none), vocab_mode ("utf8", also when the file has none, or
    "bytes": a model trained with --vocab bytes) and vocab (list of code points, or of byte
    values in bytes mode; index = token id). token_ids(metadata, text) maps a text onto it.
    dropout overrides the checkpoint's dropout (e.g. 0.0 for inference).
    A format-2 checksum is verified (ValueError on a mismatch); a file without "format" and
    "checksum" (another writer's) loads unverified, as in shakespeare-sample.
    """
    tensors, meta = read_safetensors(path)
    meta = dict(meta)
    fmt = meta.get("format")
    if fmt not in (None, FORMAT, FORMAT_V1):
        raise ValueError(f"{path}: not a shakespeare checkpoint (format {fmt!r})")
    for key in REQUIRED_METADATA:
        if key not in meta:
            raise ValueError(f"{path}: missing metadata {key!r}")
    if fmt is not None and "checksum" not in meta:
        raise ValueError(f"{path}: missing metadata 'checksum', which format {fmt!r} requires")
    if fmt != FORMAT_V1 and "checksum" in meta and content_checksum(tensors, meta) != meta["checksum"]:
        raise ValueError(f"{path}: checksum mismatch (file is corrupt)")
    for key in ("vocab_size", "embed_size", "hidden_size", "num_layers"):
        meta[key] = int(meta[key])
    meta["dropout"] = float(meta.get("dropout", "0"))
    meta["weight_drop"] = float(meta.get("weight_drop", "0"))  # training only: the model ignores it
    meta["vocab"] = [int(c) for c in json.loads(meta["vocab"])]
    if len(meta["vocab"]) != meta["vocab_size"]:
        raise ValueError(f"{path}: vocab has {len(meta['vocab'])} entries, vocab_size is {meta['vocab_size']}")
    meta["cell"] = meta.get("cell", "lstm")
    if meta["cell"] not in CELLS:
        raise ValueError(f"{path}: bad metadata cell {meta['cell']!r} (expected one of {', '.join(CELLS)})")
    meta["start_context"] = meta.get("start_context", "")
    if meta["start_context"] not in ("", "\n"):
        raise ValueError(f"{path}: bad metadata start_context {meta['start_context']!r} (expected '\\n' or none)")
    meta["vocab_mode"] = meta.get("vocab_mode", "utf8")
    if meta["vocab_mode"] not in VOCAB_MODES:
        raise ValueError(f"{path}: bad metadata vocab_mode {meta['vocab_mode']!r} (expected 'utf8' or 'bytes')")
    if meta["vocab_mode"] == "bytes" and meta["vocab"] and max(meta["vocab"]) > 255:
        raise ValueError(f"{path}: a byte vocabulary with an entry above 255")
    model = CharRNN(meta["vocab_size"], meta["embed_size"], meta["hidden_size"], meta["num_layers"],
                    meta["dropout"] if dropout is None else dropout, cell=meta["cell"])
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)
    model.eval()
    return model, meta


def token_ids(meta, text):
    """The token ids of text under a checkpoint's metadata (load_checkpoint's): text is a str
    for a code-point vocabulary, bytes for a byte vocabulary (a str is then taken as UTF-8).
    KeyError names a symbol the vocabulary lacks."""
    index = {c: i for i, c in enumerate(meta["vocab"])}
    if meta.get("vocab_mode", "utf8") == "bytes":
        symbols = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    else:
        symbols = [ord(ch) for ch in (text.decode("utf-8") if isinstance(text, (bytes, bytearray)) else text)]
    return [index[c] for c in symbols]


def score(model, meta, text):
    """(nll_sum, count) of text as shakespeare-sample --score computes it: the start context
    (meta["start_context"]) fed first, then every character predicted from what precedes it;
    without one, from a zero state, every character after the first. Sums in float64."""
    start = token_ids(meta, meta.get("start_context", "")) if meta.get("start_context") else []
    ids = torch.tensor([start + token_ids(meta, text)])                # (1, n)
    with torch.no_grad():
        logits, _ = model(ids[:, :-1])                                 # (1, n-1, V), zero state
        nll = torch.nn.functional.cross_entropy(logits[0].double(), ids[0, 1:], reduction="sum").item()
    return nll, ids.shape[1] - 1


def _check_vocab(vocab, size, vocab_mode="utf8"):
    """vocab (code points, characters or a str; byte values or a bytes object in bytes mode) as
    a list of ints: strictly increasing Unicode scalar values (bytes: 0..255), size of them."""
    if vocab_mode == "bytes" and isinstance(vocab, str):
        raise ValueError("a byte vocabulary is a list of byte values or a bytes object, not a str")
    cps = [ord(c) if isinstance(c, str) and len(c) == 1 else int(c) for c in vocab]
    if len(cps) != size:
        raise ValueError(f"the vocabulary has {len(cps)} characters, the model's embedding {size}")
    for i, c in enumerate(cps):
        if vocab_mode == "bytes" and not 0 <= c <= 255:
            raise ValueError(f"vocabulary entry {i} ({c}) is not a byte value")
        if not (0 <= c <= 0x10FFFF) or 0xD800 <= c <= 0xDFFF:
            raise ValueError(f"vocabulary entry {i} ({c}) is not a Unicode scalar value")
        if i and c <= cps[i - 1]:
            raise ValueError(f"vocabulary entry {i} ({c}) is not above the previous one: token ids index "
                             "the sorted vocabulary")
    return cps


def save_checkpoint(model, vocab, path, train_config=None, dropout=None, writer="auto", vocab_mode=None,
                    start_context=None):
    """Saves a CharRNN (or its state_dict; the cell is the one whose tensors it holds) as a model file that shakespeare-sample samples and
    scores and shakespeare-train --init-from fine-tunes (a new run: no optimizer state).

    vocab: the model's characters in token-id order, as code points, characters or a str; token ids index
    the sorted vocabulary, as in the C tool (sorted(set(text)) builds it).
    train_config: optional dict or JSON text kept in the file (informational).
    dropout: recorded in the metadata; default the model's dropout_p (0 for a bare state_dict).
    writer: "auto" (the safetensors package when importable), "safetensors" or "python".
    vocab_mode: "utf8" (code points) or "bytes" (byte values, as --vocab bytes: shakespeare-sample
    then reads and writes raw bytes); default "bytes" when vocab is a bytes object, else "utf8".
    start_context: "\n" to record that the texts begin after a newline (as shakespeare-train's
    models do; sampling and scoring then feed it first); None: a zero state.
    Returns the metadata written, checksum included."""
    state = model.state_dict() if hasattr(model, "state_dict") else dict(model)
    tensors = {k: v.detach().to(device="cpu", dtype=torch.float32) for k, v in state.items()}
    cells = [c for c, (_, prefix, _) in CELLS.items() if f"{prefix}.weight_hh_l0" in tensors]
    if "embedding.weight" not in tensors or len(cells) != 1:
        raise ValueError("not a CharRNN state: embedding.weight or one cell's weight_hh_l0 "
                         f"({', '.join(p + '.weight_hh_l0' for _, p, _ in CELLS.values())}) is missing")
    cell, prefix = cells[0], CELLS[cells[0]][1]
    V, E = tensors["embedding.weight"].shape
    H = tensors[f"{prefix}.weight_hh_l0"].shape[1]
    L = 0
    while f"{prefix}.weight_hh_l{L}" in tensors:
        L += 1
    expected = CharRNN(V, E, H, L, cell=cell).state_dict()
    if set(tensors) != set(expected):
        extra, missing = sorted(set(tensors) - set(expected)), sorted(set(expected) - set(tensors))
        raise ValueError(f"not a CharRNN state: unexpected tensors {extra}, missing {missing}")
    for name, t in expected.items():
        if tensors[name].shape != t.shape:
            raise ValueError(f"tensor {name} has shape {tuple(tensors[name].shape)}, expected {tuple(t.shape)}")
    if vocab_mode is None:
        vocab_mode = "bytes" if isinstance(vocab, (bytes, bytearray)) else "utf8"
    if vocab_mode not in VOCAB_MODES:
        raise ValueError(f"vocab_mode must be 'utf8' or 'bytes', got {vocab_mode!r}")
    cps = _check_vocab(vocab, V, vocab_mode)
    if dropout is None:
        dropout = getattr(model, "dropout_p", 0.0)
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    meta = {"format": FORMAT, "vocab_size": str(V), "embed_size": str(E), "hidden_size": str(H),
            "num_layers": str(L), "dropout": repr(float(dropout)),
            "vocab": "[" + ",".join(str(c) for c in cps) + "]"}
    if vocab_mode == "bytes":  # absent means code points, as the C writer does
        meta["vocab_mode"] = "bytes"
    if cell != "lstm":  # absent means the LSTM, as the C writer does
        meta["cell"] = cell
    if start_context:
        if start_context != "\n" or (10 not in cps):
            raise ValueError("start_context must be '\\n', with a newline in the vocabulary")
        meta["start_context"] = start_context
    if train_config is not None:
        meta["train_config"] = train_config if isinstance(train_config, str) else json.dumps(train_config)
    meta["checksum"] = content_checksum(tensors, meta)
    write_safetensors(path, tensors, meta, writer)
    return meta


def main(argv):
    if len(argv) != 2:
        print("usage: shakespeare_torch.py MODEL.safetensors", file=sys.stderr)
        return 2
    model, meta = load_checkpoint(argv[1])
    print(f"loaded {argv[1]}: V={meta['vocab_size']} E={meta['embed_size']} H={meta['hidden_size']} "
          f"L={meta['num_layers']} cell={meta['cell']} dropout={meta['dropout']} vocab_mode={meta['vocab_mode']} "
          f"params={sum(p.numel() for p in model.parameters())}")
    for name, p in model.state_dict().items():
        print(f"  {name:24s} {tuple(p.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
