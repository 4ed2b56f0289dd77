"""Hover thumbnails: images from a folder (embedded) or a column of URLs (linked)."""
from __future__ import annotations

import base64
import io
from pathlib import Path

import pandas as pd

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
SIZE = 128


def thumbnail_column(source, objects: pd.DataFrame, size: int = SIZE) -> list[str]:
    """One image reference per object for the hover tooltip.

    ``source`` is a folder, whose image named after an object (``<name>.png``, ``<name>.jpg``, ..., the name
    itself where it is a file name, ``cat.jpg``, as salmon's and Mechanical Turk's exports name objects, or
    ``<object index>.<suffix>``, the number also zero-padded, ``00123.jpg``, as image sets number their files
    and as the reader keeps ids ``00123``: the number 123) is shrunk to ``size`` pixels
    and embedded as a data URI, so the report stays self-contained; or a sequence
    with one entry per object: a local image path (embedded the same way), an
    ``http(s)://`` URL (linked, so the browser fetches it on hover) or ``""``.
    """
    n = len(objects)
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        folder = Path(source)
        images = [p for p in sorted(folder.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES]
        if not images:
            raise ValueError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)})")
        by_file = {p.name: p for p in images}  # objects named by their image file, as crowd exports name them
        files = {p.stem: p for p in images}
        padded = {}  # "00123" -> 123; an exact name or number is looked up first
        for stem, p in files.items():
            if stem.isascii() and stem.isdigit():
                padded.setdefault(int(stem), p)
        found = [_by_name(by_file, files, str(name)) or files.get(str(o)) or _numbered(padded, o)
                 for o, name in zip(objects["object"], objects["name"])]
        if not any(found):
            name = str(objects["name"].iloc[0]) if n else ""
            example = name if Path(name).suffix.lower() in IMAGE_SUFFIXES else f"{name}{IMAGE_SUFFIXES[0]}"
            raise ValueError(f"{folder}: no image is named after an object (e.g. {example!r} or "
                             f"'{objects['object'].iloc[0] if n else 0}{IMAGE_SUFFIXES[0]}')")
        _warn_missing(folder, objects, found)
        return [embed_image(p, size) if p is not None else "" for p in found]
    if isinstance(source, (str, Path)):  # a path, but no folder
        raise ValueError(f"{source}: {'a file, not a folder of images' if Path(source).exists() else 'no such folder'}"
                         " (a folder of images named after the objects; in Python, also a list with one image per "
                         "object)")
    entries = list(source)
    if len(entries) != n:
        raise ValueError(f"got {len(entries)} thumbnails for {n} objects")
    out = []
    for entry in entries:
        entry = "" if entry is None or (isinstance(entry, float) and entry != entry) else str(entry)
        if entry and not entry.startswith(("http://", "https://", "data:")):
            entry = embed_image(Path(entry), size)
        out.append(entry)
    return out


def _by_name(by_file: dict, by_stem: dict, name: str):
    """The image of an object named ``name``: the file of that name (``cat.jpg``; of a path, its last part), else
    the file whose name less its suffix is ``name`` (``cat`` -> ``cat.png``)."""
    if not name:
        return None
    return by_file.get(name) or by_file.get(Path(name).name) or by_stem.get(name)


def _numbered(padded: dict, obj):
    """The image whose zero-padded number is ``obj``'s (an integer object id), else None."""
    try:
        return padded.get(int(obj)) if float(obj) == int(obj) else None
    except (TypeError, ValueError, OverflowError):
        return None


def _warn_missing(folder: Path, objects: pd.DataFrame, found: list) -> None:
    """A warning naming the objects with comparisons that got no image: a folder of ``aardvark_01b.jpg`` for
    objects named ``aardvark`` matched a few by chance and left the rest without a picture, without a word."""
    import warnings

    from ..data.diagnostics import DataWarning

    used = objects["n_responses"].to_numpy() > 0 if "n_responses" in objects else [True] * len(objects)
    lacking = [str(name) or f"#{o}" for o, name, path, u in zip(objects["object"], objects["name"], found, used)
               if path is None and u]
    if lacking:
        warnings.warn(f"{folder}: {len(lacking)} of {sum(used)} objects with comparisons have no image named after "
                      f"them ({', '.join(lacking[:3])}{', ...' if len(lacking) > 3 else ''}; looked for "
                      f"<name> or <object number> with {', '.join(IMAGE_SUFFIXES)}): they show none on hover",
                      DataWarning, stacklevel=3)


def embed_image(path: Path, size: int = SIZE) -> str:
    """A ``data:`` URI of ``path`` shrunk to at most ``size`` x ``size`` pixels (PNG or JPEG)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.thumbnail((size, size))
            has_alpha = image.mode in ("RGBA", "LA", "P")
            image = image.convert("RGBA" if has_alpha else "RGB")
            buffer = io.BytesIO()
            image.save(buffer, format="PNG" if has_alpha else "JPEG", quality=85)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read image ({exc})") from None
    kind = "png" if has_alpha else "jpeg"
    return f"data:image/{kind};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"
