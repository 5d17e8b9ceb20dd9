"""The weights store: published pretrained weights (torchvision's and timm's) and a user's own.

`catalogue` lists what the libraries publish, from their own metadata; `download` fetches a
file with resume and a hash check; `store` keeps files in ``TRAINYARD_HOME/weights``; `fit`
checks that weights suit a network and loads them into it for fine-tuning.
"""
