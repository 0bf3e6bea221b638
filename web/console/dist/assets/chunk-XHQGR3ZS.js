import{a,b,c}from"./chunk-5RGVWY2C.js";import"./chunk-B6UG7DRN.js";import"./chunk-4TNCM2YQ.js";export{b as Credentials,c as TestOutcome,a as providerWords};
