# One image for web (daphne), worker (celery) and beat; see compose.yaml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_LINK_MODE=copy \
    UV_COMPILE_BYTECODE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv

RUN pip install --no-cache-dir uv

WORKDIR /app

# Dependencies first, so code changes do not reinstall them.
COPY pyproject.toml uv.lock ./
RUN uv sync --locked --no-dev --no-install-project --no-cache

COPY . .

# var/ holds the embedded-default files and must be writable (settings create it on import).
RUN useradd --system --create-home --home-dir /home/arena --uid 10001 arena \
    && mkdir -p /app/var \
    && chown -R arena:arena /app/var

ENV PATH="/app/.venv/bin:$PATH"
USER arena

EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "arena.asgi:application"]
