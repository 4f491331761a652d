/** A problem+json answer of the API (docs/decisions.md §2), as a typed error. */
export class ApiError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    public readonly detail: string | undefined,
    public readonly errors: Array<{ path: string; message: string }> = [],
    public readonly retryAfter?: number,
  ) {
    super(detail ?? `${status} ${code}`);
    this.name = 'ApiError';
  }
}

/** Turns a failed Response into an ApiError, whatever its body. */
export async function toApiError(res: Response): Promise<ApiError> {
  let body: { code?: unknown; detail?: unknown; errors?: unknown } = {};
  try {
    body = (await res.clone().json()) as typeof body;
  } catch {
    /* not JSON */
  }
  const retry = Number(res.headers.get('retry-after'));
  return new ApiError(
    res.status,
    typeof body.code === 'string' ? body.code : res.status === 401 ? 'UNAUTHORIZED' : 'HTTP_ERROR',
    typeof body.detail === 'string' ? body.detail : undefined,
    Array.isArray(body.errors) ? (body.errors as ApiError['errors']) : [],
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}
