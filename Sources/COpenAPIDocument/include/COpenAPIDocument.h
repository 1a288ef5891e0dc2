#ifndef SHOPFLOOR_COPENAPIDOCUMENT_H
#define SHOPFLOOR_COPENAPIDOCUMENT_H

/// The bytes of Sources/StoreServer/openapi.yaml, compiled into the binary.
const unsigned char *shopfloor_openapi_document(void);

/// How many bytes `shopfloor_openapi_document()` holds (no terminating NUL counted).
unsigned long shopfloor_openapi_document_length(void);

#endif
