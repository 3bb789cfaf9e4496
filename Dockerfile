# The hwr images: one for the API (`serve --role api`) and the workers (`serve --role worker`),
# the default target; and `trainer` (`docker build --target trainer`), the same with Python and
# PyTorch for `serve --role trainer` (docs/models.md). docker-compose.yml runs all three. Node runs
# the TypeScript sources directly, so there is no build step and no dev dependency in the image.
FROM node:24-slim AS service

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
COPY domain ./domain
COPY projections ./projections
COPY migrations ./migrations
COPY assets ./assets
# The default model setup and the three models it borrows (the segmenter, the handwriting
# recognizer with its language model, and the print reader); without them a worker refuses to
# start (model_invalid).
COPY models/default ./models/default
COPY models/hwr-seg-v3 ./models/hwr-seg-v3
COPY models/hwr-htr-v3 ./models/hwr-htr-v3
COPY models/hwr-print-v1 ./models/hwr-print-v1

# Temporary files; with BLOB_STORE=filesystem also the stored files (uploads, page images,
# results), which must then be one volume shared by the API and every worker.
ENV DATA_DIR=/var/lib/hwr
# glibc's malloc, not hwr, reads this: one arena instead of eight per core. Recognition
# allocates large buffers from many threads (onnxruntime, sharp, the inference worker), and each
# arena keeps what was freed in it: peak memory over the fixture pages 1,015 -> 794 MB with two
# arenas, about 60 MB less again with one, same speed (docs/deployment.md, "Memory"; ADR 0052).
ENV MALLOC_ARENA_MAX=1
# Blocks up to 256 MB from the heap, kept there when freed (no trim under 512 MB free): the models'
# activations (tens of MB each, allocated and freed every run) were mmapped and unmapped at every
# run, and the page faults and munmaps cost more than the runs (docs/deployment.md, "Memory").
ENV MALLOC_MMAP_THRESHOLD_=268435456
ENV MALLOC_TRIM_THRESHOLD_=536870912
# V8's young generation: semi-spaces of at most 4 MB instead of Node 24's automatic up to 64 MB
# (over ten pages its new space grew to 64 MB while 10-40 MB of the heap was in use): the service's
# peak over the fixture pages about 700 -> 570 MB, the same CPU time (docs/deployment.md, "Memory").
# A NODE_OPTIONS given at run time replaces this one.
ENV NODE_OPTIONS=--max-semi-space-size=4
RUN mkdir -p /var/lib/hwr && chown node:node /var/lib/hwr
USER node

EXPOSE 8080
ENTRYPOINT ["node", "bin/hwr.js"]
CMD ["serve"]

# The trainer: Debian's Python with PyTorch (CPU), ONNX, NumPy and Pillow, OpenBLAS (Debian's PyTorch
# multiplies with the system's BLAS: the reference one is 15 times slower), and train/. It runs the
# page pipeline's recognition too (to measure a trained model), so it is the service image plus these.
FROM service AS trainer
USER root
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 python3-torch python3-onnx python3-numpy python3-pil libopenblas0-pthread \
  && rm -rf /var/lib/apt/lists/*
COPY train ./train
USER node
ENV TRAINER=auto
CMD ["serve", "--role", "trainer"]

# The default target: the service image without Python.
FROM service
