"""Files in and out, safely: bounded readers of paths a user or a file gave (``files``),
atomic writes never through a symbolic link (``atomic``), ``.npz`` without pickle (``npz``),
pictures and image arrays (``images``, ``digit_image``). Nothing here knows the model."""
