export { redactSecrets, SECRET_KEY_FAMILIES, PRIVATE_KEY_MASK } from './secrets.js';
export { redactPrivacy, EMAIL_MASK, PHONE_MASK } from './privacy.js';
export { redactValue } from './value.js';
export { FULL_MASK } from './mask.js';
